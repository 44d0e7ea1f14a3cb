package dev.sluice.dist;

import static org.assertj.core.api.Assertions.assertThat;

/** The contract on Tomcat: what Tomcat logs about a failed context and about leaks. */
abstract class TomcatContract extends DistributionContract {

    @Override
    void assertFailedDeployment(Server server, String context, Server.Deployment deployment) {
        TomcatServer tomcat = (TomcatServer) server;
        assertThat(tomcat.console()).as("console (catalina.out)")
                .contains("Context [/" + context + "] startup failed due to previous errors")
                .contains("rule.api.windw");
        assertThat(tomcat.catalinaLog()).as("logs/catalina.<date>.log")
                .contains("Context [/" + context + "] startup failed due to previous errors");
        // Sluice's check at deployment (its ServletContainerInitializer) fails the context before any filter
        // starts: Tomcat's log has the exception, with the key and what to write instead
        dev.sluice.testing.Poll.until(java.time.Duration.ofSeconds(10), "Tomcat's logs to name the key and the fix",
                () -> (tomcat.catalinaLog() + tomcat.localhostLog()).contains("did you mean rule.api.window?"));
    }

    /** Tomcat's leak detection runs at every undeployment and warns in catalina.out and catalina.log. */
    @Override
    void assertNoLeakWarnings(Server server) {
        assertThat(server.mainLog())
                .doesNotContain("appears to have started a thread named")
                .doesNotContain("failed to stop it")
                .doesNotContain("memory leak");
    }
}
