package dev.sluice.dist;

import java.util.Map;

/**
 * Eclipse Jetty 12.1 with the ee11 environment (Servlet 6.1), from the same {@code jetty-home} as
 * {@link JettyEe10DistIT}. Jetty 12.0 has no ee11: {@code -Pjetty-12.0} leaves this class out.
 */
class JettyEe11DistIT extends DistributionContract {

    @Override
    String serverName() {
        return "jetty-ee11";
    }

    @Override
    Server createServer(String name, Map<String, String> environment) {
        return JettyServer.create(name, Server.dirProperty("dist.jetty.home"), "ee11", environment);
    }

    @Override
    void assertFailedDeployment(Server server, String context, Server.Deployment deployment) {
        JettyEe10DistIT.assertJettyFailed(server, context);
    }
}
