package dev.sluice.dist;

import java.util.List;
import java.util.Map;

/**
 * Eclipse Jetty 12.1 with the ee11 environment (Servlet 6.1). Jetty 12.0 has no ee11: this class
 * runs with {@code -Pjetty-12.1} (see dist-it/pom.xml).
 */
class JettyEe11DistIT extends DistributionContract {

    @Override
    List<Server> createFleet(String fleetName, Map<String, String> environment) {
        return JettyEe10DistIT.jettys("jetty-ee11", "ee11", environment);
    }

    @Override
    void assertFailedDeployment(Server server, String context, Server.Deployment deployment) {
        JettyEe10DistIT.assertJettyFailed(server, context);
    }
}
