package dev.sluice.dist;

import java.nio.file.Files;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/** WildFly ({@code org.wildfly:wildfly-dist:<current>:zip}), the standalone server with its stock standalone.xml. */
class WildFlyDistIT extends DistributionContract {

    @Override
    String serverName() {
        return "wildfly";
    }

    @Override
    Server createServer(String name, Map<String, String> environment) {
        return WildFlyServer.create(name, Server.dirProperty("dist.wildfly.home"), environment);
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
