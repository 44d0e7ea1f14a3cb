package dev.sluice.dist;

import dev.sluice.it.support.Crowd;
import dev.sluice.it.support.ExampleWar;
import dev.sluice.it.support.FleetContract;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import java.net.URI;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/** A fleet of three different containers (a Tomcat 11, a Jetty ee10, a WildFly) sharing one Redis. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class MixedFleetDistIT {

    List<Server> fleet;

    @BeforeAll
    void startFleet() {
        Map<String, String> env = Servers.environment("mixed");
        fleet = Servers.startAll(List.of(
                TomcatServer.create("mixed-tomcat11", Server.dirProperty("dist.tomcat11.home"), env),
                JettyServer.create("mixed-jetty-ee10", Server.dirProperty("dist.jetty.home"), "ee10", env),
                WildFlyServer.create("mixed-wildfly", Server.dirProperty("dist.wildfly.home"), env)));
    }

    @AfterAll
    void stopFleet() {
        if (fleet != null) Servers.closeAll(fleet);
    }

    @Test
    void tomcatJettyAndWildFlySharingOneRedisAllowExactlyTheLimit() throws Exception {
        // the limit, the algorithm, the key prefix and the Redis come from the server processes'
        // environment, through the placeholders of the WAR's ratelimit.properties; a shared 2-core
        // machine needs more than the default 50 ms Redis timeout for no decision to fall back
        Path war = ExampleWar.withInitParams(Map.of("redis.timeout", "2s"), Server.serversDir().resolve("wars"));
        Servers.eachInParallel(fleet, s -> s.deployServing("fleet", war));
        try {
            List<URI> targets = fleet.stream().map(s -> s.uri("fleet", "/api/fleet")).toList();
            Crowd.Outcome o = Crowd.hammer(targets, FleetContract.CLIENTS, FleetContract.REQUESTS_PER_CLIENT);
            System.out.printf("DIST mixed fleet: %s%n", o);
            assertThat(o.other()).isZero();
            assertThat(o.allowed()).as("Tomcat, Jetty and WildFly together allow exactly the limit").isEqualTo(Servers.LIMIT);
            for (Server s : fleet) {
                assertThat(s.jmx().longAttribute(Jmx.sluiceBean("fleet"), "Allowed")).as("%s allowed some", s).isPositive();
            }
        } finally {
            Servers.eachInParallel(fleet, s -> s.undeploy("fleet"));
        }
    }
}
