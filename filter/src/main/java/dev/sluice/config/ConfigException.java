package dev.sluice.config;




/**
 * A configuration value Sluice cannot use. The message always names the key, the value and what
 * is accepted, so a typo fails start-up with a message that says how to fix it. Secrets are
 * masked: the value of {@code redis.password} and the password part of {@code redis.url} never
 * appear in the message nor in {@link #value()}.
 */
public class ConfigException extends IllegalArgumentException {

    private static final long serialVersionUID = 1L;

    private final String key;
    private final String value;

    public ConfigException(String key, String value, String accepted) {
        super(message(key, value, accepted));
        this.key = key;
        this.value = ConfigKeys.shown(key, value);
    }

    public ConfigException(String key, String value, String accepted, Throwable cause) {
        super(message(key, value, accepted), cause);
        this.key = key;
        this.value = ConfigKeys.shown(key, value);
    }

    private static String message(String key, String value, String accepted) {
        String shown = value == null ? "(missing)" : "'" + ConfigKeys.shown(key, value) + "'";
        return "Invalid Sluice configuration: " + key + "=" + shown + ": " + accepted;
    }

    /** The offending key, e.g. {@code rule.api.limit}. */
    public String key() {
        return key;
    }

    /** The offending value (secrets masked), or {@code null} when the key is missing. */
    public String value() {
        return value;
    }
}
