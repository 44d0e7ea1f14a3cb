package dev.sluice.internal.failover;

import dev.sluice.limiter.LimiterUnavailableException;

/**
 * A Redis call failed for one acquisition of a request whose acquisitions were decided one call each
 * (Redis Cluster, its rules on several masters): thrown by the engine after it gave back what the
 * acquisitions before it took, so that the failure handling knows which node failed.
 */
public final class PartialFailure extends LimiterUnavailableException {

    private static final long serialVersionUID = 1L;

    private final int index;

    /**
     * @param index   the acquisition whose call failed, in the request's order
     * @param failure the call's failure
     */
    public PartialFailure(int index, LimiterUnavailableException failure) {
        super(failure.getMessage(), failure.getCause(), failure.isTimeout());
        this.index = index;
    }

    /** The acquisition whose call failed. */
    public int index() {
        return index;
    }
}
