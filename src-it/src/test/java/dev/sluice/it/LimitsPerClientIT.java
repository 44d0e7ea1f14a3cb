package dev.sluice.it;

import java.util.Map;

/** {@link LimitsPerClientContract} on embedded Jetty 12.1 (ee10). */
class LimitsPerClientIT extends LimitsPerClientContract {

    @Override
    DeployedWar start(Map<String, String> params) throws Exception {
        return WebApp.start(params);
    }
}
