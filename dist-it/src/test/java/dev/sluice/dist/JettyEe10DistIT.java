package dev.sluice.dist;

import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/** Eclipse Jetty 12 ({@code org.eclipse.jetty:jetty-home:12.x:tar.gz}) with the ee10 environment (Servlet 6.0). */
class JettyEe10DistIT extends DistributionContract {

    static final String ENVIRONMENT = "ee10";

    @Override
    String serverName() {
        return "jetty-" + ENVIRONMENT;
    }

    @Override
    Server createServer(String name, Map<String, String> environment) {
        return JettyServer.create(name, Server.dirProperty("dist.jetty.home"), ENVIRONMENT, environment);
    }

    @Override
    void assertFailedDeployment(Server server, String context, Server.Deployment deployment) {
        assertJettyFailed(server, context);
    }

    static void assertJettyFailed(Server server, String context) {
        assertThat(server.console().lines()
                .filter(l -> l.contains("Failed startup of context") && l.contains(",/" + context + ",")))
                .as("Jetty's console reports the failed context").isNotEmpty();
        assertThat(server.console()).contains("rule.api.windw").contains("did you mean rule.api.window");
    }
}
