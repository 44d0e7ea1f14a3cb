package dev.sluice.internal.http;

import dev.sluice.Sluice;
import jakarta.servlet.AsyncContext;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;

import java.io.IOException;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * Holds a request admitted by a {@code leaky-bucket} rule until its drain slot.
 *
 * <p>Where the container and every filter and servlet on the request's path support async, the
 * request is suspended with {@link HttpServletRequest#startAsync} and re-dispatched when its slot
 * comes: no container thread waits. Filters after Sluice then see an {@code ASYNC} dispatch, so
 * their mappings must include {@code <dispatcher>ASYNC</dispatcher>}. Where async is not
 * supported the container thread is parked until the slot (never longer than the rule's
 * {@code max-delay}): correct, but it holds a thread.
 */
public final class DelayedAdmission implements AutoCloseable {

    private final ScheduledExecutorService timer;

    public DelayedAdmission(String filterName) {
        this.timer = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "sluice-delay-" + filterName);
            t.setDaemon(true);
            return t;
        });
    }

    /** Lets the request through after {@code delayMs}, asynchronously where possible. */
    public void admitAfter(long delayMs, HttpServletRequest request, HttpServletResponse response, FilterChain chain)
            throws IOException, ServletException {
        if (request.isAsyncSupported()) {
            AsyncContext async = request.startAsync(request, response);
            async.setTimeout(delayMs + 60_000);
            try {
                timer.schedule((Runnable) async::dispatch, delayMs, TimeUnit.MILLISECONDS);
            } catch (RejectedExecutionException closing) {
                async.dispatch(); // the filter is being destroyed: let the request through now rather than strand it
            }
            return;
        }
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(delayMs);
        for (long left; (left = deadline - System.nanoTime()) > 0; ) {
            LockSupport.parkNanos(left);
            if (Thread.interrupted()) {
                Thread.currentThread().interrupt();
                break;
            }
        }
        chain.doFilter(request, response);
    }

    /** Releases the requests still waiting for their slot at once, so an undeploy strands none. */
    @Override
    public void close() {
        for (Runnable pending : timer.shutdownNow()) {
            pending.run();
        }
    }
}
