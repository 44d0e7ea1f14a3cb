package dev.sluice.internal.algorithm.model;

/** Tokens as an exact fraction, refilled at limit/window per ms up to the burst; time never rewinds. */
final class TokenBucketModel implements Model {

    private final long limit;
    private final long window;
    private final long burst;
    private Ratio tokens; // null: never seen
    private long stamp;

    TokenBucketModel(long limit, long window, long burst) {
        this.limit = limit;
        this.window = window;
        this.burst = burst;
    }

    private Ratio tokensAt(long now) {
        if (tokens == null) return Ratio.of(burst);
        long elapsed = Math.max(now, stamp) - stamp;
        return tokens.plus(Ratio.of(elapsed * limit, window)).min(Ratio.of(burst));
    }

    @Override
    public boolean admits(long now, long cost) {
        return tokensAt(now).compareTo(Ratio.of(cost)) >= 0;
    }

    @Override
    public void take(long now, long cost) {
        Ratio left = tokensAt(now).minus(Ratio.of(cost));
        stamp = tokens == null ? now : Math.max(now, stamp);
        tokens = left;
    }

    @Override
    public boolean fresh(long now) {
        return tokensAt(now).compareTo(Ratio.of(burst)) == 0;
    }

    @Override
    public long capacity() {
        return burst;
    }

    @Override
    public Model copy() {
        TokenBucketModel m = new TokenBucketModel(limit, window, burst);
        m.tokens = tokens;
        m.stamp = stamp;
        return m;
    }
}
