package dev.sluice.dist;

import dev.sluice.it.support.ActualCostContract;
import dev.sluice.it.support.ConcurrencyContract;

import java.util.Map;

/**
 * Apache Tomcat 11.0 ({@code org.apache.tomcat:tomcat:11.0.x:zip}); also the distribution that runs the contracts of
 * concurrency rules and settled costs, which every embedded container runs too (in every distribution they would add
 * about 20 s each to a build that must stay near 15 minutes).
 */
class Tomcat11DistIT extends TomcatContract implements ConcurrencyContract, ActualCostContract {

    @Override
    String serverName() {
        return "tomcat11";
    }

    @Override
    Server createServer(String name, Map<String, String> environment) {
        return TomcatServer.create(name, Server.dirProperty("dist.tomcat11.home"), environment);
    }
}
