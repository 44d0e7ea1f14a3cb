package dev.sluice.it;

import jakarta.servlet.DispatcherType;
import jakarta.servlet.ServletContext;
import org.eclipse.jetty.ee10.servlet.FilterHolder;
import org.eclipse.jetty.ee10.webapp.WebAppContext;
import org.eclipse.jetty.server.handler.ContextHandler;

import java.util.EnumSet;

/** Jetty's ee10 environment (Servlet 6.0), in which the {@code *IT} tests run the WAR. */
final class JettyEe10 implements WebApp.Environment {

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
