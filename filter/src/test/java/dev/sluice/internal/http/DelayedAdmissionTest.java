package dev.sluice.internal.http;

import dev.sluice.testing.Poll;
import jakarta.servlet.AsyncContext;
import jakarta.servlet.AsyncEvent;
import jakarta.servlet.AsyncListener;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletContext;
import jakarta.servlet.ServletOutputStream;
import jakarta.servlet.ServletRequest;
import jakarta.servlet.ServletResponse;
import jakarta.servlet.WriteListener;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.lang.reflect.Proxy;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Every request a leaky-bucket rule holds gets exactly one answer: the application at its slot,
 * or a 503 with {@code Retry-After} when the filter is destroyed, the async timeout fires or the
 * request fails while it waits. The Servlet API is faked here to drive each event precisely; the
 * integration tests in {@code src-it} show the same on Jetty and Tomcat.
 */
class DelayedAdmissionTest {

    private final DelayedAdmission delays = new DelayedAdmission("test");

    @AfterEach
    void close() {
        delays.close();
    }

    @Test
    void heldRequestGoesToTheApplicationAtItsSlot() {
        Exchange exchange = new Exchange(true);
        long start = System.nanoTime();
        exchange.admitAfter(delays, 100);
        assertThat(delays.held()).isEqualTo(1);
        assertThat(exchange.async.timeout).as("the container's timeout comes after the slot").isGreaterThan(100);

        Poll.until(Duration.ofSeconds(5), "the re-dispatch at the slot", () -> exchange.async.dispatches.get() == 1);
        assertThat((System.nanoTime() - start) / 1_000_000).isGreaterThanOrEqualTo(100);
        assertThat(exchange.response.status).as("the application answers, not the filter").isZero();
        assertThat(delays.held()).isZero();
    }

    @Test
    void closeAnswersEverySuspendedRequestAtOnceWith503() {
        List<Exchange> exchanges = new CopyOnWriteArrayList<>();
        for (int i = 0; i < 5; i++) {
            Exchange exchange = new Exchange(true);
            exchange.admitAfter(delays, 10_000 + i * 1_000L);
            exchanges.add(exchange);
        }
        assertThat(delays.held()).isEqualTo(5);

        delays.close();

        for (int i = 0; i < exchanges.size(); i++) {
            Exchange exchange = exchanges.get(i);
            assertThat(exchange.response.status).isEqualTo(503);
            assertThat(exchange.response.headers).containsEntry("Retry-After", Long.toString(10 + i))
                    .containsEntry("Cache-Control", "no-store");
            assertThat(exchange.response.contentType).isEqualTo("application/problem+json");
            assertThat(exchange.response.body()).contains("\"status\":503").contains("shutting down")
                    .contains("\"retry-after\":" + (10 + i));
            assertThat(exchange.async.completions.get()).as("completed once").isEqualTo(1);
            assertThat(exchange.async.dispatches.get()).as("never handed to the stopping application").isZero();
        }
        assertThat(delays.held()).isZero();
    }

    @Test
    void requestHeldAfterCloseIsAnsweredAtOnce() {
        delays.close();
        Exchange exchange = new Exchange(true);
        exchange.admitAfter(delays, 5_000);
        assertThat(exchange.response.status).isEqualTo(503);
        assertThat(exchange.response.headers).containsEntry("Retry-After", "5");
        assertThat(exchange.async.started).as("nothing left waiting").isFalse();
        assertThat(delays.held()).isZero();
    }

    @Test
    void asyncTimeoutWhileHeldAnswers503AndTheSlotLaterDoesNothing() throws Exception {
        Exchange timedOut = new Exchange(true);
        timedOut.admitAfter(delays, 50);
        timedOut.async.fire(AsyncListener::onTimeout);

        assertThat(timedOut.response.status).isEqualTo(503);
        assertThat(timedOut.response.headers).containsEntry("Retry-After", "1");
        assertThat(timedOut.response.body()).contains("timeout");
        assertThat(timedOut.async.completions.get()).isEqualTo(1);
        assertThat(delays.held()).isZero();

        awaitLaterSlot();
        assertThat(timedOut.async.dispatches.get()).as("no dispatch of a request already answered").isZero();
        assertThat(timedOut.async.completions.get()).isEqualTo(1);
    }

    @Test
    void asyncErrorWhileHeldCompletesTheRequestAndForgetsIt() throws Exception {
        Exchange failed = new Exchange(true);
        failed.admitAfter(delays, 50);
        failed.response.broken = true; // the connection is gone: nothing can be written
        failed.async.fire(AsyncListener::onError);

        assertThat(failed.async.completions.get()).as("completed, so the container needs no error dispatch").isEqualTo(1);
        assertThat(delays.held()).isZero();

        awaitLaterSlot();
        assertThat(failed.async.dispatches.get()).isZero();
        delays.close();
        assertThat(failed.async.completions.get()).as("an undeploy does not answer it twice").isEqualTo(1);
    }

    @Test
    void requestCompletedByTheContainerIsForgotten() {
        Exchange exchange = new Exchange(true);
        exchange.admitAfter(delays, 10_000);
        exchange.async.fire(AsyncListener::onComplete);
        assertThat(delays.held()).isZero();
        delays.close();
        assertThat(exchange.response.status).as("nothing written to a completed request").isZero();
    }

    @Test
    void parkedRequestIsAnsweredWith503WhenTheFilterCloses() throws Exception {
        Exchange exchange = new Exchange(false);
        CompletableFuture<Void> waiting = CompletableFuture.runAsync(() -> exchange.admitAfter(delays, 30_000));
        Poll.until(Duration.ofSeconds(5), "the request to be parked", () -> delays.held() == 1);

        long closedAt = System.nanoTime();
        delays.close();
        waiting.get(5, TimeUnit.SECONDS);

        assertThat((System.nanoTime() - closedAt) / 1_000_000).as("released at once, not at its slot").isLessThan(5_000);
        assertThat(exchange.response.status).isEqualTo(503);
        assertThat(exchange.response.headers).containsKey("Retry-After");
        assertThat(exchange.chain.passed.get()).isZero();
        assertThat(delays.held()).isZero();
    }

    @Test
    void parkedRequestGoesToTheApplicationAtItsSlot() throws Exception {
        Exchange exchange = new Exchange(false);
        long start = System.nanoTime();
        exchange.admitAfter(delays, 100);
        assertThat((System.nanoTime() - start) / 1_000_000).isGreaterThanOrEqualTo(100);
        assertThat(exchange.chain.passed.get()).isEqualTo(1);
        assertThat(exchange.response.status).isZero();
        assertThat(delays.held()).isZero();
    }

    @Test
    void beyondTheCapNothingIsHeldNorWrittenAndTheCallerIsTold() {
        Exchange first = new Exchange(true);
        Exchange second = new Exchange(true);
        assertThat(first.admitAfter(delays, 10_000, 2)).isTrue();
        assertThat(second.admitAfter(delays, 10_000, 2)).isTrue();

        Exchange third = new Exchange(true);
        assertThat(third.admitAfter(delays, 10_000, 2)).as("the cap of 2 is reached").isFalse();
        assertThat(third.async.started).as("not suspended").isFalse();
        assertThat(third.response.status).as("the caller answers").isZero();
        assertThat(third.chain.passed.get()).isZero();
        assertThat(delays.held()).isEqualTo(2);

        first.async.fire(AsyncListener::onComplete);
        assertThat(third.admitAfter(delays, 10_000, 2)).as("a hold that ended frees its place").isTrue();
    }

    @Test
    void aThreadHeldInTheMiddleOfAForwardCountsAgainstTheSameCap() throws Exception {
        Exchange first = new Exchange(true);
        assertThat(first.admitAfter(delays, 10_000, 1)).isTrue();
        Exchange forwarded = new Exchange(false);
        assertThat(delays.holdThread(10_000, 1, forwarded.response.proxy)).as("the cap of 1 is reached")
                .isEqualTo(DelayedAdmission.ThreadHold.AT_CAPACITY);
        assertThat(forwarded.response.status).as("the caller answers").isZero();

        first.async.fire(AsyncListener::onComplete);
        assertThat(delays.holdThread(20, 1, forwarded.response.proxy)).as("held until its slot, then on")
                .isEqualTo(DelayedAdmission.ThreadHold.GO_ON);
        assertThat(delays.held()).as("its place freed when it went on").isZero();
        assertThat(first.admitAfter(delays, 10_000, 1)).isTrue();
    }

    @Test
    void everyEndingOfAHoldFreesItsPlaceOnce() {
        Exchange timedOut = new Exchange(true);
        assertThat(timedOut.admitAfter(delays, 10_000, 1)).isTrue();
        timedOut.async.fire(AsyncListener::onTimeout);
        timedOut.async.fire(AsyncListener::onComplete); // the container completes it too: still freed once

        Exchange released = new Exchange(true);
        assertThat(released.admitAfter(delays, 50, 1)).isTrue();
        Poll.until(Duration.ofSeconds(5), "the re-dispatch at the slot", () -> released.async.dispatches.get() == 1);
        released.async.fire(AsyncListener::onComplete);

        Exchange parked = new Exchange(false);
        assertThat(parked.admitAfter(delays, 50, 1)).as("parked and let through at its slot").isTrue();
        assertThat(parked.chain.passed.get()).isEqualTo(1);

        Exchange[] two = {new Exchange(true), new Exchange(true)};
        assertThat(two[0].admitAfter(delays, 10_000, 1)).as("one place, and it is free").isTrue();
        assertThat(two[1].admitAfter(delays, 10_000, 1)).as("exactly one").isFalse();
    }

    @Test
    void parkedRequestsCountAgainstTheCapWhileTheyWait() throws Exception {
        Exchange parked = new Exchange(false);
        CompletableFuture<Boolean> waiting = CompletableFuture.supplyAsync(() -> parked.admitAfter(delays, 30_000, 1));
        Poll.until(Duration.ofSeconds(5), "the request to be parked", () -> delays.held() == 1);

        Exchange another = new Exchange(false);
        long start = System.nanoTime();
        assertThat(another.admitAfter(delays, 30_000, 1)).isFalse();
        assertThat((System.nanoTime() - start) / 1_000_000).as("told at once, not parked").isLessThan(5_000);

        delays.close();
        assertThat(waiting.get(5, TimeUnit.SECONDS)).isTrue();
        assertThat(parked.response.status).isEqualTo(503);
    }

    /**
     * Holds another request until a slot after every earlier one and waits for its re-dispatch:
     * the timer runs its tasks in order, so any earlier slot's task has run by then.
     */
    private void awaitLaterSlot() {
        Exchange later = new Exchange(true);
        later.admitAfter(delays, 150);
        Poll.until(Duration.ofSeconds(5), "a later slot's re-dispatch", () -> later.async.dispatches.get() == 1);
    }

    /** One request and response through {@link DelayedAdmission}, with what happened to them. */
    private static final class Exchange {
        final FakeAsync async = new FakeAsync();
        final FakeResponse response = new FakeResponse();
        final CountingChain chain = new CountingChain();
        final HttpServletRequest request;

        Exchange(boolean asyncSupported) {
            Map<String, Object> attributes = new ConcurrentHashMap<>();
            this.request = (HttpServletRequest) Proxy.newProxyInstance(getClass().getClassLoader(),
                    new Class<?>[]{HttpServletRequest.class}, (proxy, method, args) -> switch (method.getName()) {
                        case "isAsyncSupported" -> asyncSupported;
                        case "startAsync" -> {
                            async.started = true;
                            yield async;
                        }
                        case "getAttribute" -> attributes.get((String) args[0]);
                        default -> throw new UnsupportedOperationException(method.getName());
                    });
        }

        void admitAfter(DelayedAdmission delays, long delayMs) {
            assertThat(admitAfter(delays, delayMs, 1_000)).as("held").isTrue();
        }

        boolean admitAfter(DelayedAdmission delays, long delayMs, int maxHeld) {
            try {
                return delays.admitAfter(delayMs, maxHeld, request, response.proxy, chain);
            } catch (Exception e) {
                throw new AssertionError(e);
            }
        }
    }

    private static final class CountingChain implements FilterChain {
        final AtomicInteger passed = new AtomicInteger();

        @Override
        public void doFilter(ServletRequest request, ServletResponse response) {
            passed.incrementAndGet();
        }
    }

    /** The response side: status, headers and body as written, or an I/O failure when broken. */
    private static final class FakeResponse {
        volatile int status;
        volatile String contentType;
        volatile boolean broken;
        final Map<String, String> headers = new ConcurrentHashMap<>();
        final ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        final HttpServletResponse proxy = (HttpServletResponse) Proxy.newProxyInstance(getClass().getClassLoader(),
                new Class<?>[]{HttpServletResponse.class}, (p, method, args) -> switch (method.getName()) {
                    case "isCommitted" -> false;
                    case "resetBuffer", "setContentLength" -> null;
                    case "setStatus" -> {
                        status = (Integer) args[0];
                        yield null;
                    }
                    case "setHeader" -> headers.put((String) args[0], (String) args[1]);
                    case "setContentType" -> {
                        contentType = (String) args[0];
                        yield null;
                    }
                    case "getOutputStream" -> stream();
                    default -> throw new UnsupportedOperationException(method.getName());
                });

        String body() {
            synchronized (bytes) {
                return bytes.toString(StandardCharsets.UTF_8);
            }
        }

        private ServletOutputStream stream() throws java.io.IOException {
            if (broken) throw new java.io.IOException("connection reset");
            return new ServletOutputStream() {
                @Override
                public boolean isReady() {
                    return true;
                }

                @Override
                public void setWriteListener(WriteListener writeListener) {
                }

                @Override
                public void write(int b) {
                    synchronized (bytes) {
                        bytes.write(b);
                    }
                }
            };
        }
    }

    /** An async cycle whose listeners the test fires itself, counting dispatches and completions. */
    private static final class FakeAsync implements AsyncContext {
        volatile boolean started;
        volatile long timeout;
        final List<AsyncListener> listeners = new CopyOnWriteArrayList<>();
        final AtomicInteger dispatches = new AtomicInteger();
        final AtomicInteger completions = new AtomicInteger();

        interface Event {
            void fire(AsyncListener listener, AsyncEvent event) throws java.io.IOException;
        }

        void fire(Event event) {
            for (AsyncListener listener : listeners) {
                try {
                    event.fire(listener, new AsyncEvent(this));
                } catch (java.io.IOException e) {
                    throw new AssertionError(e);
                }
            }
        }

        @Override
        public void dispatch() {
            dispatches.incrementAndGet();
        }

        @Override
        public void complete() {
            completions.incrementAndGet();
            fire(AsyncListener::onComplete);
        }

        @Override
        public void addListener(AsyncListener listener) {
            listeners.add(listener);
        }

        @Override
        public void setTimeout(long timeout) {
            this.timeout = timeout;
        }

        @Override
        public long getTimeout() {
            return timeout;
        }

        @Override
        public ServletRequest getRequest() {
            return null;
        }

        @Override
        public ServletResponse getResponse() {
            return null;
        }

        @Override
        public boolean hasOriginalRequestAndResponse() {
            return true;
        }

        @Override
        public void dispatch(String path) {
            throw new UnsupportedOperationException();
        }

        @Override
        public void dispatch(ServletContext context, String path) {
            throw new UnsupportedOperationException();
        }

        @Override
        public void start(Runnable run) {
            throw new UnsupportedOperationException();
        }

        @Override
        public void addListener(AsyncListener listener, ServletRequest request, ServletResponse response) {
            listeners.add(listener);
        }

        @Override
        public <T extends AsyncListener> T createListener(Class<T> clazz) {
            throw new UnsupportedOperationException();
        }
    }
}
