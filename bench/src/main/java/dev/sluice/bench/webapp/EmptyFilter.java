package dev.sluice.bench.webapp;

import jakarta.servlet.Filter;
import jakarta.servlet.FilterChain;
import jakarta.servlet.FilterConfig;
import jakarta.servlet.ServletException;
import jakarta.servlet.ServletRequest;
import jakarta.servlet.ServletResponse;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletRequestWrapper;

import java.io.IOException;

/**
 * A filter that does nothing but pass the request on: what the container charges a request for
 * having a filter mapped at all (its filter chain), the reference below which no filter's own
 * cost can be measured. With init-param {@code wrap=true} it also does the two things any filter
 * that gates later dispatches must do, as Sluice does on every request: it sets one request
 * attribute and passes the chain a request wrapper ({@link HttpServletRequestWrapper}, nothing
 * overridden). The {@code empty} and {@code empty-wrapping} variants of {@code TomcatDistribution}.
 */
public final class EmptyFilter implements Filter {

    private static final String ATTRIBUTE = EmptyFilter.class.getName();
    private boolean wrap;

    @Override
    public void init(FilterConfig config) {
        wrap = Boolean.parseBoolean(config.getInitParameter("wrap"));
    }

    @Override
    public void doFilter(ServletRequest request, ServletResponse response, FilterChain chain) throws IOException, ServletException {
        if (!wrap) {
            chain.doFilter(request, response);
            return;
        }
        HttpServletRequestWrapper wrapped = new HttpServletRequestWrapper((HttpServletRequest) request);
        request.setAttribute(ATTRIBUTE, wrapped);
        chain.doFilter(wrapped, response);
    }
}
