package dev.sluice.dist;

import java.nio.file.Files;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/** WildFly ({@code org.wildfly:wildfly-dist:<current>:zip}), the standalone server with its stock standalone.xml. */
class WildFlyDistIT extends DistributionContract {

    @Override
    List<Server> createFleet(String fleetName, Map<String, String> environment) {
        var home = Server.dirProperty("dist.wildfly.home");
        return List.of(WildFlyServer.create("wildfly-1", home, environment), WildFlyServer.create("wildfly-2", home, environment));
    }

    /**
     * The deployment scanner marks the WAR {@code .failed} (Undertow would otherwise initialize the
     * filter at the first request: the WAR reported deployed, then answering 500s), and
     * {@code server.log} names the key.
     */
    @Override
    void assertFailedDeployment(Server server, String context, Server.Deployment deployment) {
        assertThat(Files.exists(server.deployDir().resolve(context + ".war.failed"))).as("deployments/%s.war.failed", context).isTrue();
        assertThat(server.mainLog()).contains("rule.api.windw");
    }
}
