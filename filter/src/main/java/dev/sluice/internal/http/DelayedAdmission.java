package dev.sluice.internal.http;

import jakarta.servlet.AsyncContext;
import jakarta.servlet.AsyncEvent;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
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
 *
 * <p>At most {@code max-held-requests} requests are held at once, suspended and parked together:
 * beyond that {@link #admitAfter} holds nothing and says so, and the caller refuses the request at
 * once (as when the rule's queue is full), so that on a container without async a few clients
 * cannot park every container thread.
 *
 * <p>Every held request is answered, whatever happens while it waits:
 * <ul>
 *   <li>at its slot it goes on to the application;</li>
 *   <li>when the filter is destroyed (undeploy, redeploy, shutdown) it is answered at once with
 *       503, {@code Retry-After} and a problem body: it never reached the application, so any
 *       client or load balancer may safely send it again, to this instance once redeployed or to
 *       another; passing it on instead would hand it to an application that is being torn down
 *       (whose servlets some containers have already destroyed) and would let it in before its
 *       slot;</li>
 *   <li>if the container's async timeout fires first (it is set past the slot, so only a timer
 *       that cannot run reaches it) it is answered the same way, never with the container's 500;</li>
 *   <li>on an async error the hold is given up, the request answered so if the connection still
 *       takes it, and completed.</li>
 * </ul>
 * Whichever comes first acts; the others find the request already answered.
 */
public final class DelayedAdmission implements AutoCloseable {

    /** How long past its slot a suspended request may wait before the container times it out. */
    static final long ASYNC_TIMEOUT_MARGIN_MS = 60_000;

    private final ScheduledExecutorService timer;
    private final Set<Hold> holds = ConcurrentHashMap.newKeySet();
    /** Holds counted against the cap: reserved before a hold is added, released when it leaves {@link #holds}. */
    private final AtomicInteger reserved = new AtomicInteger();
    private volatile boolean closed;

    /** @param instance the filter's JMX instance name ({@code shop/sluice}), in its thread's name */
    public DelayedAdmission(String instance) {
        this.timer = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "sluice-delay-" + instance);
            t.setDaemon(true);
            return t;
        });
    }

    /**
     * Lets the request through after {@code delayMs}, asynchronously where possible, unless
     * {@code maxHeld} requests are held already.
     *
     * @return {@code false} when the cap is reached: nothing was held nor written, the caller answers
     */
    public boolean admitAfter(long delayMs, int maxHeld, HttpServletRequest request, HttpServletResponse response,
                              FilterChain chain) throws IOException, ServletException {
        long slotNanos = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(delayMs);
        if (closed) {
            refuse(response, slotNanos, Reason.SHUTTING_DOWN);
            return true;
        }
        if (reserved.incrementAndGet() > maxHeld) {
            reserved.decrementAndGet();
            return false;
        }
        boolean held = false;
        try {
            if (request.isAsyncSupported()) {
                held = suspend(delayMs, slotNanos, request, response);
            } else {
                held = true;
                park(slotNanos, request, response, chain);
            }
        } finally {
            if (!held) reserved.decrementAndGet();
        }
        return true;
    }

    /** How many requests are waiting for their slot now. */
    int held() {
        return holds.size();
    }

    /** Whether a hold was added (from then on its removal from {@link #holds} releases its reservation). */
    private boolean suspend(long delayMs, long slotNanos, HttpServletRequest request, HttpServletResponse response) {
        AsyncContext async = request.startAsync(request, response);
        async.setTimeout(delayMs + ASYNC_TIMEOUT_MARGIN_MS);
        Suspended hold = new Suspended(async, response, slotNanos);
        async.addListener(new AsyncListenerAdapter(hold));
        holds.add(hold);
        if (closed) { // close() may have swept the holds before this one was added
            hold.refuse(Reason.SHUTTING_DOWN);
            return true;
        }
        try {
            hold.timer = timer.schedule(hold::release, delayMs, TimeUnit.MILLISECONDS);
        } catch (RejectedExecutionException closing) {
            hold.refuse(Reason.SHUTTING_DOWN);
        }
        return true;
    }

    /** Removes a hold, releasing its reservation once, whichever of its endings gets here first. */
    private void forget(Hold hold) {
        if (holds.remove(hold)) reserved.decrementAndGet();
    }

    private void park(long slotNanos, HttpServletRequest request, HttpServletResponse response, FilterChain chain)
            throws IOException, ServletException {
        if (parkUntil(slotNanos, response)) chain.doFilter(request, response);
    }

    /** What {@link #holdThread} came to. */
    public enum ThreadHold {
        /** The slot has come: the request goes on. */
        GO_ON,
        /** Answered while it waited (the application being undeployed): nothing more to do. */
        ANSWERED,
        /** {@code maxHeld} requests are held already: nothing was held nor written, the caller answers. */
        AT_CAPACITY
    }

    /**
     * Holds the calling thread until the slot {@code delayMs} from now, unless {@code maxHeld}
     * requests are held already: a request decided in the middle of a forward or include, which
     * cannot be suspended there. Counted against the cap like the requests {@link #admitAfter} holds.
     */
    public ThreadHold holdThread(long delayMs, int maxHeld, HttpServletResponse response) throws IOException {
        long slotNanos = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(delayMs);
        if (closed) {
            refuse(response, slotNanos, Reason.SHUTTING_DOWN);
            return ThreadHold.ANSWERED;
        }
        if (reserved.incrementAndGet() > maxHeld) {
            reserved.decrementAndGet();
            return ThreadHold.AT_CAPACITY;
        }
        return parkUntil(slotNanos, response) ? ThreadHold.GO_ON : ThreadHold.ANSWERED; // parkUntil releases it
    }

    private boolean parkUntil(long slotNanos, HttpServletResponse response) throws IOException {
        Thread thread = Thread.currentThread();
        Parked hold = new Parked(thread);
        holds.add(hold);
        try {
            // an interrupt means the container is stopping this thread: answer rather than go on
            while (!closed && !thread.isInterrupted()) {
                long left = slotNanos - System.nanoTime();
                if (left <= 0) break;
                LockSupport.parkNanos(this, left);
            }
        } finally {
            forget(hold);
        }
        if (closed || thread.isInterrupted()) {
            refuse(response, slotNanos, Reason.SHUTTING_DOWN);
            return false;
        }
        return true;
    }

    /**
     * Answers every request still waiting for its slot (503, {@code Retry-After}) at once, so an
     * undeploy strands none; a request that arrives later is answered the same way.
     */
    @Override
    public void close() {
        closed = true;
        timer.shutdownNow();
        for (Hold hold : holds) {
            hold.refuse(Reason.SHUTTING_DOWN);
        }
        try {
            // gone before the container looks for threads the application left running (Tomcat does)
            timer.awaitTermination(1, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Why a held request was answered without reaching the application. */
    private enum Reason {
        SHUTTING_DOWN("the application is shutting down; the request did not reach it"),
        TIMED_OUT("the container's async timeout ended the wait; the request did not reach the application"),
        FAILED("the request failed while it waited; it did not reach the application");

        final String detail;

        Reason(String detail) {
            this.detail = detail;
        }
    }

    /** A request waiting for its slot; {@link #refuse} answers it without the application. */
    private interface Hold {
        void refuse(Reason reason);
    }

    /**
     * A request suspended with the Servlet async API, re-dispatched by the timer at its slot; the
     * container tells it of the request's events through an {@link AsyncListenerAdapter}.
     */
    private final class Suspended implements Hold, AsyncListenerAdapter.Events {
        private final AsyncContext async;
        private final HttpServletResponse response;
        private final long slotNanos;
        private final AtomicBoolean answered = new AtomicBoolean();
        volatile Future<?> timer;

        Suspended(AsyncContext async, HttpServletResponse response, long slotNanos) {
            this.async = async;
            this.response = response;
            this.slotNanos = slotNanos;
        }

        /** At its slot: on to the application. */
        void release() {
            if (answered.compareAndSet(false, true)) {
                DelayedAdmission.this.forget(this);
                async.dispatch();
            }
        }

        @Override
        public void refuse(Reason reason) {
            if (!answered.compareAndSet(false, true)) return;
            forget();
            try {
                DelayedAdmission.refuse(response, slotNanos, reason);
            } catch (IOException | RuntimeException clientGone) {
                // nothing more can be said to this client; completing still frees the request
            } finally {
                async.complete();
            }
        }

        private void forget() {
            DelayedAdmission.this.forget(this);
            Future<?> scheduled = timer;
            if (scheduled != null) scheduled.cancel(false);
        }

        @Override
        public void onTimeout(AsyncEvent event) {
            refuse(Reason.TIMED_OUT);
        }

        @Override
        public void onError(AsyncEvent event) {
            refuse(Reason.FAILED); // answered if the connection still takes it, completed in any case
        }

        @Override
        public void onComplete(AsyncEvent event) {
            answered.set(true);
            forget();
        }

        @Override
        public void onStartAsync(AsyncEvent event) {
            // the application's own async cycle after the re-dispatch is none of this hold's business
        }
    }

    /** A request whose container thread waits for its slot (no async on its path). */
    private static final class Parked implements Hold {
        private final Thread thread;

        Parked(Thread thread) {
            this.thread = thread;
        }

        @Override
        public void refuse(Reason reason) {
            LockSupport.unpark(thread); // the waiting thread sees the filter closed and answers itself
        }
    }

    /** 503 with {@code Retry-After}: the seconds until the request's slot, at least 1. */
    private static void refuse(HttpServletResponse response, long slotNanos, Reason reason) throws IOException {
        if (response.isCommitted()) return;
        long retryAfter = RateLimitHeaders.retryAfterSeconds(
                TimeUnit.NANOSECONDS.toMillis(slotNanos - System.nanoTime()));
        byte[] body = QuotaExceededProblem.heldNotServedBody(reason.detail, retryAfter).getBytes(StandardCharsets.UTF_8);
        response.resetBuffer();
        response.setStatus(HttpServletResponse.SC_SERVICE_UNAVAILABLE);
        response.setHeader("Retry-After", Long.toString(retryAfter));
        response.setHeader("Cache-Control", "no-store");
        response.setContentType(QuotaExceededProblem.CONTENT_TYPE);
        response.setContentLength(body.length);
        try {
            response.getOutputStream().write(body);
        } catch (IllegalStateException writerTaken) {
            // the application holds the writer (a page including the held target): the body through it
            response.getWriter().write(new String(body, StandardCharsets.UTF_8));
        }
    }
}
