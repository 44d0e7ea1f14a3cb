package dev.sluice.limiter;

/**
 * A {@link Rule} was given parameters that cannot work together: a cost no request can pay, a
 * burst on an algorithm without a bucket, a window too long to count exactly. {@link #field()}
 * names the parameter as its configuration key does ({@code cost}, {@code fallback-limit}, ...),
 * so that the configuration loader can report {@code rule.<name>.<field>} with its value.
 */
public final class InvalidRuleException extends IllegalArgumentException {

    private static final long serialVersionUID = 1L;

    private final String rule;
    private final String field;
    private final String problem;

    InvalidRuleException(String rule, String field, String problem) {
        super("rule " + rule + ": " + field + ": " + problem);
        this.rule = rule;
        this.field = field;
        this.problem = problem;
    }

    /** The rule's name as given (possibly the invalid name itself). */
    public String rule() {
        return rule;
    }

    /**
     * The parameter at fault, spelled as the part of its configuration key after
     * {@code rule.<name>.}: {@code name}, {@code algorithm}, {@code limit}, {@code window},
     * {@code burst}, {@code cost}, {@code failure-policy}, {@code fallback-limit} or {@code max-delay}.
     */
    public String field() {
        return field;
    }

    /** What is wrong and what is accepted, without the rule and field names. */
    public String problem() {
        return problem;
    }
}
