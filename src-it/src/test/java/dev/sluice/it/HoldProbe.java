package dev.sluice.it;

import jakarta.servlet.AsyncContext;
import jakarta.servlet.AsyncEvent;
import jakarta.servlet.AsyncListener;
import jakarta.servlet.Filter;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.ServletRequest;
import jakarta.servlet.ServletResponse;
import jakarta.servlet.http.HttpServletRequest;

import java.io.IOException;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A filter the tests put in front of Sluice, whatever the container: it sees which requests went
 * back to the container suspended (held for a leaky-bucket slot) and how many are suspended now.
 * A request carrying {@value #ASYNC_TIMEOUT_HEADER} gets that async timeout (ms) instead of the
 * one Sluice set, to make the container time a held request out before its slot. A probe
 * registered without async support ({@link #synchronous()}) makes every request on its path
 * synchronous, so that Sluice parks the container thread instead.
 */
final class HoldProbe implements Filter {

    static final String ASYNC_TIMEOUT_HEADER = "X-Test-Async-Timeout";

    private final boolean asyncSupported;

    HoldProbe() {
        this(true);
    }

    private HoldProbe(boolean asyncSupported) {
        this.asyncSupported = asyncSupported;
    }

    /** A probe that is registered without async support. */
    static HoldProbe synchronous() {
        return new HoldProbe(false);
    }

    /** What the container must be told when the probe is registered. */
    boolean asyncSupported() {
        return asyncSupported;
    }

    private final AtomicInteger suspended = new AtomicInteger();
    private final AtomicInteger mostSuspended = new AtomicInteger();

    @Override
    public void doFilter(ServletRequest request, ServletResponse response, FilterChain chain)
            throws IOException, ServletException {
        chain.doFilter(request, response);
        if (!request.isAsyncStarted()) return;
        // still within the dispatch that started async: the timeout and listeners may be set
        AsyncContext async = request.getAsyncContext();
        String timeout = ((HttpServletRequest) request).getHeader(ASYNC_TIMEOUT_HEADER);
        if (timeout != null) async.setTimeout(Long.parseLong(timeout));
        mostSuspended.accumulateAndGet(suspended.incrementAndGet(), Math::max);
        async.addListener(new AsyncListener() {
            @Override
            public void onComplete(AsyncEvent event) {
                suspended.decrementAndGet();
            }

            @Override
            public void onTimeout(AsyncEvent event) {
            }

            @Override
            public void onError(AsyncEvent event) {
            }

            @Override
            public void onStartAsync(AsyncEvent event) {
            }
        });
    }

    /** Requests suspended now: held, or re-dispatched and not yet complete. */
    int suspended() {
        return suspended.get();
    }

    /** The most requests that were suspended at once. */
    int mostSuspended() {
        return mostSuspended.get();
    }
}
