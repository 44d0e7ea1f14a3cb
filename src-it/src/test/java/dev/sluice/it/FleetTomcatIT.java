package dev.sluice.it;

import java.util.Map;

/** {@link FleetContract} on embedded Apache Tomcat 11: three Tomcat instances in one JVM. */
class FleetTomcatIT extends FleetContract {

    @Override
    DeployedWar start(Map<String, String> params) throws Exception {
        return TomcatWebApp.start(params);
    }
}
