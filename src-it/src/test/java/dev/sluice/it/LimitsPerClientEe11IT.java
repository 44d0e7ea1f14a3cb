package dev.sluice.it;

import java.util.Map;

/** {@link LimitsPerClientContract} on embedded Jetty 12.1 in the ee11 environment (Servlet 6.1). */
class LimitsPerClientEe11IT extends LimitsPerClientContract {

    @Override
    DeployedWar start(Map<String, String> params) throws Exception {
        return WebApp.start(new JettyEe11(), params);
    }
}
