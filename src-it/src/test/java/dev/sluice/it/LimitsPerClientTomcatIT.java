package dev.sluice.it;

import java.util.Map;

/** {@link LimitsPerClientContract} on embedded Tomcat 11. */
class LimitsPerClientTomcatIT extends LimitsPerClientContract {

    @Override
    DeployedWar start(Map<String, String> params) throws Exception {
        return TomcatWebApp.start(params);
    }
}
