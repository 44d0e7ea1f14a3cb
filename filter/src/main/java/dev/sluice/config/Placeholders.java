package dev.sluice.config;

import java.util.Objects;
import java.util.function.Function;
import java.util.regex.Pattern;

/**
 * Substitutes {@code ${NAME}} and {@code ${NAME:default}} in configuration values: a system
 * property named {@code NAME} first, then an environment variable, then the default (everything
 * after the first colon, possibly empty). A placeholder that resolves to nothing and has no
 * default is an error, so a missing {@code REDIS_URL} fails start-up instead of silently
 * connecting elsewhere.
 *
 * <p>Substitution is one pass: a resolved value is not scanned again, and a default cannot
 * contain a closing brace or another placeholder.
 */
final class Placeholders {

    private static final Pattern NAME = Pattern.compile("[A-Za-z0-9_.-]+");

    private final Function<String, String> systemProperties;
    private final Function<String, String> environment;

    /** Reads the JVM's system properties and the process environment. */
    static Placeholders system() {
        return new Placeholders(System::getProperty, System::getenv);
    }

    /** For tests: the lookups to use instead of the real system properties and environment. */
    Placeholders(Function<String, String> systemProperties, Function<String, String> environment) {
        this.systemProperties = Objects.requireNonNull(systemProperties, "systemProperties");
        this.environment = Objects.requireNonNull(environment, "environment");
    }

    /**
     * @param key   the key of the value, for error messages
     * @param value the value as configured
     * @return the value with every placeholder replaced
     * @throws ConfigException naming the key and the placeholder that cannot be resolved or is malformed
     */
    String resolve(String key, String value) {
        int start = value.indexOf("${");
        if (start < 0) return value;
        StringBuilder out = new StringBuilder(value.length());
        int from = 0;
        while (start >= 0) {
            out.append(value, from, start);
            int end = value.indexOf('}', start + 2);
            if (end < 0) {
                throw new ConfigException(key, value, "'${' starts a placeholder that is never closed with '}';"
                        + " write ${NAME} or ${NAME:default}");
            }
            String body = value.substring(start + 2, end);
            int colon = body.indexOf(':');
            String name = (colon < 0 ? body : body.substring(0, colon)).trim();
            String fallback = colon < 0 ? null : body.substring(colon + 1);
            if (!NAME.matcher(name).matches()) {
                throw new ConfigException(key, value, "placeholder ${" + body + "} needs a name of letters, digits,"
                        + " '_', '.' or '-': ${NAME} or ${NAME:default}");
            }
            if (fallback != null && fallback.contains("${")) {
                throw new ConfigException(key, value, "placeholder ${" + name + ":...} has a placeholder in its default;"
                        + " nested placeholders are not supported");
            }
            String resolved = lookup(name);
            if (resolved == null) resolved = fallback;
            if (resolved == null) {
                throw new ConfigException(key, value, "placeholder ${" + name + "} is neither a system property nor an"
                        + " environment variable; set it, or give a default: ${" + name + ":default}");
            }
            out.append(resolved);
            from = end + 1;
            start = value.indexOf("${", from);
        }
        out.append(value, from, value.length());
        return out.toString();
    }

    private String lookup(String name) {
        String v = systemProperties.apply(name);
        return v != null ? v : environment.apply(name);
    }
}
