package dev.sluice.internal.http;

import jakarta.servlet.AsyncEvent;
import jakarta.servlet.AsyncListener;

import java.io.IOException;

/**
 * The one {@link AsyncListener} class of Sluice: it passes the events of an asynchronous request on to
 * the {@link Events} of that request (a give-back, a held request).
 *
 * <p>WildFly makes every class of a WAR that implements {@code AsyncListener} an EE component (the
 * Servlet specification lets listeners the container creates be injected), and such a component
 * must have a no-arg constructor: without one WildFly logs a WARN naming the class
 * ({@code WFLYEE0007: Not installing optional component}) at every deployment. The state of one
 * request has no place in a no-arg constructor, so it lives in the {@code Events}, which are no
 * listener, and this adapter has the constructor: created so, it passes events to nobody.
 */
public final class AsyncListenerAdapter implements AsyncListener {

    /** What an asynchronous request's events do; each does nothing unless overridden. */
    public interface Events {
        default void onComplete(AsyncEvent event) throws IOException {
        }

        default void onTimeout(AsyncEvent event) throws IOException {
        }

        default void onError(AsyncEvent event) throws IOException {
        }

        default void onStartAsync(AsyncEvent event) throws IOException {
        }
    }

    private static final Events NONE = new Events() {
    };

    private final Events events;

    /** An adapter that passes events to nobody: for a container that creates the listeners it finds (WildFly). */
    public AsyncListenerAdapter() {
        this(NONE);
    }

    public AsyncListenerAdapter(Events events) {
        this.events = events;
    }

    @Override
    public void onComplete(AsyncEvent event) throws IOException {
        events.onComplete(event);
    }

    @Override
    public void onTimeout(AsyncEvent event) throws IOException {
        events.onTimeout(event);
    }

    @Override
    public void onError(AsyncEvent event) throws IOException {
        events.onError(event);
    }

    @Override
    public void onStartAsync(AsyncEvent event) throws IOException {
        events.onStartAsync(event);
    }
}
