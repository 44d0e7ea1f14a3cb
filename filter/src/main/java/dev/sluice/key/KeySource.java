package dev.sluice.key;

import jakarta.servlet.http.HttpServletRequest;

/**
 * A user's own client identity, named in a key expression as {@code class:com.example.TenantKey}.
 * Sluice creates one instance at start-up through its public no-arg constructor and calls it from
 * many threads at once, so implementations must be thread-safe and fast. The value is bounded and
 * made safe for the Redis key by Sluice, like every other source's.
 */
@FunctionalInterface
public interface KeySource {

    /**
     * @return the client's identity for this request, or {@code null} (or blank) when this source
     *         does not identify it, so the next alternative of the expression is tried
     */
    String resolve(HttpServletRequest request);
}
