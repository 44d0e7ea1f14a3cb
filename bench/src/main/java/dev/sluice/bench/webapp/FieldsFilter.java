package dev.sluice.bench.webapp;

import jakarta.servlet.Filter;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.ServletRequest;
import jakarta.servlet.ServletResponse;
import jakarta.servlet.http.HttpServletResponse;

import java.io.IOException;

/**
 * A filter that decides nothing and writes the five rate-limit fields Sluice writes with its default
 * {@code headers=both} (their usual lengths, fixed values): what the container's writing of those fields
 * costs a request by itself, with no limiter at all. The {@code fields} variant of
 * {@code TomcatDistribution} measures against it where Sluice's own code is the question.
 */
public final class FieldsFilter implements Filter {

    @Override
    public void doFilter(ServletRequest request, ServletResponse response, FilterChain chain) throws IOException, ServletException {
        write((HttpServletResponse) response);
        chain.doFilter(request, response);
    }

    /** The five fields, as {@code headers=both} writes them. */
    static void write(HttpServletResponse r) {
        r.setHeader("RateLimit-Policy", "\"api\";q=1000000000;w=1000");
        r.setHeader("RateLimit", "\"api\";r=999999999;t=1");
        r.setHeader("X-RateLimit-Limit", "1000000000");
        r.setHeader("X-RateLimit-Remaining", "999999999");
        r.setHeader("X-RateLimit-Reset", "1");
    }
}
