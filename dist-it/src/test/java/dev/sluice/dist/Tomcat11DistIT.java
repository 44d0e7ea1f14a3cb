package dev.sluice.dist;

import java.util.Map;

/** Apache Tomcat 11.0 ({@code org.apache.tomcat:tomcat:11.0.x:zip}). */
class Tomcat11DistIT extends TomcatContract {

    @Override
    String serverName() {
        return "tomcat11";
    }

    @Override
    Server createServer(String name, Map<String, String> environment) {
        return TomcatServer.create(name, Server.dirProperty("dist.tomcat11.home"), environment);
    }
}
