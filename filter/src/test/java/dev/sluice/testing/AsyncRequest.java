package dev.sluice.testing;

import jakarta.servlet.AsyncContext;
import jakarta.servlet.AsyncEvent;
import jakarta.servlet.AsyncListener;
import jakarta.servlet.Filter;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletRequestWrapper;
import jakarta.servlet.http.HttpServletResponse;

import java.io.IOException;
import java.lang.reflect.Proxy;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * A request the application takes asynchronous: its servlet starts the asynchronous cycle and returns;
 * {@link #complete} is the container's {@code onComplete} to the listeners the filter added.
 */
public final class AsyncRequest {

    private final Map<String, String> recorded = new HashMap<>();
    private final HttpServletResponse response = FakeServlet.response(recorded);
    private final List<AsyncListener> listeners = new ArrayList<>();
    private HttpServletRequest request;
    private AsyncContext context;
    private RuntimeException thrown;

    private AsyncRequest() {
    }

    /** Sends {@code request} through {@code filter} to an application that goes asynchronous. */
    public static AsyncRequest start(Filter filter, HttpServletRequest request) throws Exception {
        return start(filter, request, null);
    }

    /**
     * Sends {@code request} through {@code filter} to an application that goes asynchronous and then throws
     * {@code failure} on the request's thread (the container still completes the asynchronous cycle, with an
     * error page); the exception reaches the caller as the container would see it, in {@link #thrown()}.
     */
    public static AsyncRequest startThenThrow(Filter filter, HttpServletRequest request, RuntimeException failure)
            throws Exception {
        return start(filter, request, failure);
    }

    private static AsyncRequest start(Filter filter, HttpServletRequest request, RuntimeException failure)
            throws Exception {
        AsyncRequest a = new AsyncRequest();
        boolean[] started = {false};
        a.request = new HttpServletRequestWrapper(request) {
            @Override
            public boolean isAsyncStarted() {
                return started[0];
            }

            @Override
            public AsyncContext getAsyncContext() {
                return a.context;
            }
        };
        a.context = (AsyncContext) Proxy.newProxyInstance(AsyncRequest.class.getClassLoader(),
                new Class<?>[]{AsyncContext.class}, (proxy, method, args) -> switch (method.getName()) {
                    case "addListener" -> a.listeners.add((AsyncListener) args[0]);
                    default -> throw new UnsupportedOperationException(method.getName());
                });
        try {
            filter.doFilter(a.request, a.response, (req, resp) -> {
                started[0] = true;
                if (failure != null) throw failure;
            });
        } catch (RuntimeException e) {
            if (e != failure) throw e;
            a.thrown = e;
        }
        return a;
    }

    /** The listeners the filter added (it waits for the completion through one). */
    public List<AsyncListener> listeners() {
        return listeners;
    }

    /** What the application threw after starting the asynchronous cycle, as it reached the container; or null. */
    public RuntimeException thrown() {
        return thrown;
    }

    /** The request as the application sees it (its attributes, for a cost stated in one). */
    public HttpServletRequest request() {
        return request;
    }

    /** The application answers {@code status}; the container reports the completion. */
    public void complete(int status) throws IOException {
        response.setStatus(status);
        for (AsyncListener l : listeners) l.onComplete(new AsyncEvent(context, request, response));
    }
}
