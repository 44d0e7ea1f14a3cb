package dev.sluice.dist;

import java.util.Map;

/** Apache Tomcat 10.1 ({@code org.apache.tomcat:tomcat:10.1.x:zip}): Servlet 6.0, the API Sluice compiles against. */
class Tomcat10DistIT extends TomcatContract {

    @Override
    String serverName() {
        return "tomcat10";
    }

    @Override
    Server createServer(String name, Map<String, String> environment) {
        return TomcatServer.create(name, Server.dirProperty("dist.tomcat10.home"), environment);
    }
}
