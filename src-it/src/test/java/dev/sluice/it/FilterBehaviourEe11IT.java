package dev.sluice.it;

import dev.sluice.it.support.ExampleApp;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** {@link FilterBehaviourIT}'s tests on embedded Jetty 12.1 in the ee11 environment (Servlet 6.1). */
class FilterBehaviourEe11IT extends FilterBehaviourIT {

    @Override
    WebApp.Environment environment() {
        return new JettyEe11();
    }

    @Test
    void theWarRunsOnServlet61() throws Exception {
        try (WebApp app = start(ExampleApp.named("ee11-servlet").sluice())) {
            assertThat(app.servletVersion()).isEqualTo("6.1");
        }
    }
}
