package dev.sluice.internal.metrics;

import dev.sluice.limiter.RuleDecision;

/**
 * Meters kept in a metrics library over {@link SluiceMetrics}' counters. No type of that library
 * appears here, so {@code SluiceMetrics} can hold one without loading the library.
 */
interface MeterBinding {

    /** A decision answered by {@code source} took {@code nanos}. Called on the request's thread: must be cheap. */
    void recordLatency(RuleDecision.Source source, long nanos);

    /** The instance name changed (JMX registration chose it): the meters move to the new {@code instance} tag. */
    void rename(String instance);

    /** {@link SluiceMetrics#ruleCounters()} changed: meters for new rules, none for dropped ones. */
    void rulesChanged();

    /** The Redis nodes changed (a node came into the topology or left it): a breaker gauge per node now. */
    void breakersChanged();

    /** Removes every meter from the registry. */
    void close();
}
