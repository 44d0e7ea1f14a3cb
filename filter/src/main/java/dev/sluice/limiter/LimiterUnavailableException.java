package dev.sluice.limiter;

/** The store behind a limiter could not answer in time (Redis down, slow, partitioned or refusing). */
public class LimiterUnavailableException extends RuntimeException {

    private static final long serialVersionUID = 1L;

    private final boolean timeout;

    public LimiterUnavailableException(String message, Throwable cause, boolean timeout) {
        super(message, cause);
        this.timeout = timeout;
    }

    /** True when the store was too slow rather than refusing or unreachable. */
    public boolean isTimeout() {
        return timeout;
    }
}
