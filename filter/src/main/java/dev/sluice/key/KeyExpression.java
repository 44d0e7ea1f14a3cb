package dev.sluice.key;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * A parsed {@code rule.<name>.key}: who a client is. Pure syntax, no servlet types;
 * {@link ClientKeyResolver} turns it into request lookups.
 *
 * <p>Grammar: {@code expression = composite ("|" composite)*}, {@code composite = source ("+" source)*}.
 * {@code |} binds looser than {@code +}: {@code header:X-Api-Key|ip+user} is {@code header:X-Api-Key},
 * or else {@code ip+user}. A composite is present only when all its sources are; the expression
 * takes the first present alternative, and when none is, the rule does not apply. Whitespace
 * around tokens is ignored; source names and header names are case-insensitive.
 */
public final class KeyExpression {

    static final String ACCEPTED = "accepted sources: ip, user, header:NAME, query:NAME, session, attr:NAME, global, "
            + "class:FQCN; join with + (all must be present) or | (first present), e.g. header:X-Api-Key|ip";

    /** What a source reads from the request. */
    public enum Kind {
        /** the client address, see {@link ClientIpResolver} */
        IP("ip", false),
        /** the container's authenticated principal name */
        USER("user", false),
        /** a request header (the first line) */
        HEADER("header", true),
        /** a query-string parameter (never the body) */
        QUERY("query", true),
        /** an existing session's id (never creates one) */
        SESSION("session", false),
        /** a request attribute set by an earlier filter */
        ATTR("attr", true),
        /** one counter for everybody */
        GLOBAL("global", false),
        /** a user class implementing {@link KeySource} */
        CLASS("class", true);

        private final String token;
        private final boolean hasArgument;

        Kind(String token, boolean hasArgument) {
            this.token = token;
            this.hasArgument = hasArgument;
        }

        public String token() {
            return token;
        }

        public boolean hasArgument() {
            return hasArgument;
        }
    }

    /**
     * One source of an expression.
     *
     * @param kind     what it reads
     * @param argument the header/query/attribute/class name; {@code null} for sources without one.
     *                 Header names are lower-cased.
     */
    public record Source(Kind kind, String argument) {
        @Override
        public String toString() {
            return argument == null ? kind.token : kind.token + ":" + argument;
        }
    }

    private final String text;
    private final List<List<Source>> alternatives;

    private KeyExpression(String text, List<List<Source>> alternatives) {
        this.text = text;
        this.alternatives = alternatives;
    }

    /**
     * Parses a key expression.
     *
     * @throws IllegalArgumentException naming the problem and the accepted forms
     */
    public static KeyExpression parse(String text) {
        if (text == null || text.isBlank()) {
            throw invalid(text, "it is empty");
        }
        List<List<Source>> alternatives = new ArrayList<>();
        for (String alternative : text.split("\\|", -1)) {
            if (alternative.isBlank()) {
                throw invalid(text, "an alternative around '|' is empty");
            }
            List<Source> parts = new ArrayList<>();
            for (String part : alternative.split("\\+", -1)) {
                parts.add(source(text, part.strip()));
            }
            alternatives.add(List.copyOf(parts));
        }
        return new KeyExpression(text.strip(), List.copyOf(alternatives));
    }

    private static Source source(String text, String token) {
        if (token.isEmpty()) {
            throw invalid(text, "a part around '+' is empty");
        }
        int colon = token.indexOf(':');
        String name = (colon < 0 ? token : token.substring(0, colon)).strip().toLowerCase(Locale.ROOT);
        String argument = colon < 0 ? null : token.substring(colon + 1).strip();
        for (Kind kind : Kind.values()) {
            if (!kind.token.equals(name)) continue;
            if (!kind.hasArgument) {
                if (argument != null) throw invalid(text, "'" + kind.token + "' takes no argument, got '" + token + "'");
                return new Source(kind, null);
            }
            if (argument == null || argument.isEmpty()) {
                throw invalid(text, "'" + kind.token + "' needs a name, e.g. " + kind.token + ":" + example(kind));
            }
            return new Source(kind, validArgument(text, kind, argument));
        }
        throw invalid(text, "unknown source '" + token + "'");
    }

    private static String validArgument(String text, Kind kind, String argument) {
        switch (kind) {
            case HEADER -> {
                for (int i = 0; i < argument.length(); i++) {
                    if (!isTokenChar(argument.charAt(i))) {
                        throw invalid(text, "'" + argument + "' is not a valid header name");
                    }
                }
                return argument.toLowerCase(Locale.ROOT);
            }
            case CLASS -> {
                if (!isClassName(argument)) {
                    throw invalid(text, "'" + argument + "' is not a fully qualified class name");
                }
                return argument;
            }
            default -> {
                for (int i = 0; i < argument.length(); i++) {
                    char c = argument.charAt(i);
                    if (c <= ' ' || c == 0x7f) {
                        throw invalid(text, "'" + argument + "' contains whitespace or control characters");
                    }
                }
                return argument;
            }
        }
    }

    private static String example(Kind kind) {
        return switch (kind) {
            case HEADER -> "X-Api-Key";
            case QUERY -> "api_key";
            case ATTR -> "tenant";
            default -> "com.example.TenantKey";
        };
    }

    /** RFC 9110 token characters. */
    private static boolean isTokenChar(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
                || "!#$%&'*+-.^_`|~".indexOf(c) >= 0;
    }

    private static boolean isClassName(String name) {
        boolean start = true;
        for (int i = 0; i < name.length(); i++) {
            char c = name.charAt(i);
            if (start) {
                if (!Character.isJavaIdentifierStart(c)) return false;
                start = false;
            } else if (c == '.') {
                start = true;
            } else if (!Character.isJavaIdentifierPart(c)) {
                return false;
            }
        }
        return !start;
    }

    private static IllegalArgumentException invalid(String text, String problem) {
        return new IllegalArgumentException("invalid key expression '" + text + "': " + problem + "; " + ACCEPTED);
    }

    /** The alternatives in order; each is a composite of one or more sources, all of which must be present. */
    public List<List<Source>> alternatives() {
        return alternatives;
    }

    /** Whether any alternative reads {@code kind}, e.g. whether the client address is needed at all. */
    public boolean uses(Kind kind) {
        for (List<Source> composite : alternatives) {
            for (Source source : composite) {
                if (source.kind == kind) return true;
            }
        }
        return false;
    }

    /** The expression as configured (stripped). */
    @Override
    public String toString() {
        return text;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof KeyExpression other && alternatives.equals(other.alternatives);
    }

    @Override
    public int hashCode() {
        return alternatives.hashCode();
    }
}
