package dev.sluice.dist;

import java.util.List;
import java.util.Map;

/** Apache Tomcat 11.0 ({@code org.apache.tomcat:tomcat:11.0.x:zip}). */
class Tomcat11DistIT extends TomcatContract {

    @Override
    List<Server> createFleet(String fleetName, Map<String, String> environment) {
        return tomcats("tomcat11", Server.dirProperty("dist.tomcat11.home"), environment);
    }
}
