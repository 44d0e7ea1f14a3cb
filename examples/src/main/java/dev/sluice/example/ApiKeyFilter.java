package dev.sluice.example;

import jakarta.servlet.Filter;
import jakarta.servlet.FilterChain;
import jakarta.servlet.FilterConfig;
import jakarta.servlet.ServletException;
import jakarta.servlet.ServletRequest;
import jakarta.servlet.ServletResponse;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;

import java.io.IOException;
import java.util.HashMap;
import java.util.Map;

/**
 * A tiny stand-in for an application's authentication: a request with a known {@code X-Api-Key}
 * gets the request attributes {@code customer} (whom Sluice's {@code rule.api.key = attr:customer|ip}
 * counts) and {@code plan} (which {@code rule.api.plan = attr:plan} reads); an unknown key is refused
 * with 401 before Sluice counts anything, so a made-up key never becomes a counter of its own; a
 * request without a key is anonymous (Sluice counts it per client address). Mapped on every path
 * and every dispatcher type, so that no request reaches a rule unauthenticated, whatever path it
 * came in by (Sluice decides a forward's rules before the target's own filters run); it
 * authenticates a client request once, whatever its dispatches.
 *
 * <p>The keys and their plans are the init-param {@code keys}: {@code key=plan, key=plan}.
 */
public class ApiKeyFilter implements Filter {

    /** The request attribute naming the authenticated customer (here, its API key). */
    static final String CUSTOMER = "customer";

    private final Map<String, String> plans = new HashMap<>();

    @Override
    public void init(FilterConfig config) throws ServletException {
        String keys = config.getInitParameter("keys");
        if (keys == null) return;
        for (String entry : keys.split(",")) {
            String[] pair = entry.trim().split("=", 2);
            if (pair.length != 2 || pair[0].isBlank() || pair[1].isBlank()) {
                throw new ServletException("ApiKeyFilter: 'keys' entries are key=plan, got '" + entry.trim() + "'");
            }
            plans.put(pair[0].trim(), pair[1].trim());
        }
    }

    @Override
    public void doFilter(ServletRequest req, ServletResponse res, FilterChain chain) throws IOException, ServletException {
        HttpServletRequest request = (HttpServletRequest) req;
        String key = request.getHeader("X-Api-Key");
        if (key != null && request.getAttribute(CUSTOMER) == null) {
            String plan = plans.get(key);
            if (plan == null) {
                ((HttpServletResponse) res).sendError(HttpServletResponse.SC_UNAUTHORIZED, "unknown API key");
                return;
            }
            request.setAttribute(CUSTOMER, key);
            request.setAttribute("plan", plan);
        }
        chain.doFilter(req, res);
    }
}
