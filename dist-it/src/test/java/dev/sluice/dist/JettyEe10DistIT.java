package dev.sluice.dist;

import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/** Eclipse Jetty 12 ({@code org.eclipse.jetty:jetty-home:12.x:tar.gz}) with the ee10 environment (Servlet 6.0). */
class JettyEe10DistIT extends DistributionContract {

    static final String ENVIRONMENT = "ee10";

    @Override
    List<Server> createFleet(String fleetName, Map<String, String> environment) {
        return jettys("jetty-" + ENVIRONMENT, ENVIRONMENT, environment);
    }

    static List<Server> jettys(String name, String ee, Map<String, String> environment) {
        var home = Server.dirProperty("dist.jetty.home");
        return List.of(JettyServer.create(name + "-1", home, ee, environment), JettyServer.create(name + "-2", home, ee, environment));
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
