package dev.sluice.dist;

import java.util.List;
import java.util.Map;

/** Apache Tomcat 10.1 ({@code org.apache.tomcat:tomcat:10.1.x:zip}): Servlet 6.0, the API Sluice compiles against. */
class Tomcat10DistIT extends TomcatContract {

    @Override
    List<Server> createFleet(String fleetName, Map<String, String> environment) {
        return tomcats("tomcat10", Server.dirProperty("dist.tomcat10.home"), environment);
    }
}
