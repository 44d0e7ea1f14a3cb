package dev.sluice.it;

import jakarta.servlet.DispatcherType;
import jakarta.servlet.ServletContext;
import org.eclipse.jetty.ee11.servlet.FilterHolder;
import org.eclipse.jetty.ee11.webapp.WebAppContext;
import org.eclipse.jetty.server.handler.ContextHandler;

import java.net.URL;
import java.util.EnumSet;

/**
 * Jetty's ee11 environment (Servlet 6.1), in which the {@code *Ee11IT} tests run the WAR. They run
 * in a failsafe execution of their own, without the ee10 jars and with {@code jakarta.servlet-api}
 * 6.1 in place of the module's 6.0 (see {@code src-it/pom.xml}). Its code is {@link JettyEe10}'s
 * against ee11's classes: the two environments share no servlet class.
 */
final class JettyEe11 implements WebApp.Environment {

    static {
        // the two environments' classes must never meet, and ee11 needs the Servlet 6.1 API
        URL servletApi = ClassLoader.getSystemResource("jakarta/servlet/Servlet.class");
        if (ClassLoader.getSystemResource("org/eclipse/jetty/ee10/webapp/WebAppContext.class") != null
                || servletApi == null || !servletApi.toString().contains("jakarta.servlet-api-6.1")) {
            throw new IllegalStateException("the ee11 ITs need jakarta.servlet-api 6.1 and no Jetty ee10 on the "
                    + "classpath (jakarta.servlet.Servlet comes from " + servletApi + "): run them through the "
                    + "jetty-ee11-it failsafe execution of src-it/pom.xml");
        }
    }

    @Override
    public ContextHandler webApp(String war, String overrideDescriptor, HoldProbe probe) {
        WebAppContext app = new WebAppContext();
        app.setContextPath("/");
        app.setWar(war);
        app.setThrowUnavailableOnStartupException(true);
        app.addOverrideDescriptor(overrideDescriptor);
        if (probe != null) {
            FilterHolder holder = new FilterHolder(probe);
            holder.setAsyncSupported(probe.asyncSupported()); // one filter without async makes requests synchronous
            app.addFilter(holder, "/*", EnumSet.of(DispatcherType.REQUEST));
        }
        return app;
    }

    @Override
    public String servletVersion(ContextHandler webApp) {
        ServletContext context = ((WebAppContext) webApp).getServletContext();
        return context.getMajorVersion() + "." + context.getMinorVersion();
    }
}
