package dev.sluice.key;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Arrays;
import java.util.Base64;

/**
 * Who is counted: the client part of a rule's Redis key ({@code <prefix>{<rule>:<clientKey>}}),
 * bounded and tagged where it is made, so that no caller can break the key layout or share a
 * counter by accident.
 *
 * <p>Made in three ways:
 * <ul>
 *   <li>{@link #of(String)}: a key chosen by application code ({@code Sluice.tryAcquire("api",
 *       "customer-42")}), tagged {@code k=}: {@code k=customer-42};</li>
 *   <li>by the filter, from a rule's {@code key} expression ({@link ClientKeyResolver}): one
 *       {@code tag=value} part per source, joined by {@code +}: {@code ip=203.0.113.7},
 *       {@code u=alice+ip=2001:db8:1:2::/64}, {@code h=key-42}, {@code global};</li>
 *   <li>{@link #parse(String)}: a key exactly as Sluice shows it (in a Redis key, a log line or
 *       JMX), for an operator who wants to reset one client.</li>
 * </ul>
 * The tag names the source, so values from different sources never share a counter: a header
 * holding {@code 203.0.113.7} is {@code h=203.0.113.7}, not the address's
 * {@code ip=203.0.113.7}, and the application's {@code customer-42} is {@code k=customer-42}
 * whether it comes through {@code tryAcquire} or through {@code decide}.
 *
 * <p>A value is kept as it is only when it is at most {@value #MAX_PLAIN_VALUE} characters of
 * ASCII letters, digits and {@code - . _ ~ : @ / = ! $ & ' ( ) * , ; %}; any other value (too
 * long, or holding braces, {@code +}, {@code #}, whitespace, control or non-ASCII characters)
 * becomes {@code #} and 22 characters of base64url SHA-256 (128 bits). A plain value never
 * starts with {@code #}, so a hash never equals a plain value, and never holds {@code +}, so a
 * value cannot forge another part. A whole key longer than {@value #MAX_KEY} characters (a long
 * composite) is itself replaced by {@code #<hash>}. So a client key is at most {@value #MAX_KEY}
 * characters and never contains braces (which would move the Redis Cluster hash tag), whitespace
 * or control characters, whatever a client sends, and it is the same on every instance (no salt).
 *
 * <p>Immutable; equal when the values are equal.
 */
public final class ClientKey {

    static final int MAX_PLAIN_VALUE = 64;
    static final int MAX_KEY = 100;

    /** The tag of keys chosen by application code. */
    static final String APPLICATION_TAG = "k";

    private static final ClientKey GLOBAL = new ClientKey("global");

    private static final MessageDigest SHA_256;

    static {
        try {
            SHA_256 = MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException impossible) {
            throw new ExceptionInInitializerError(impossible); // every JDK has SHA-256
        }
    }

    private final String value;

    private ClientKey(String value) {
        this.value = value;
    }

    /**
     * The key of a client named by application code, tagged {@code k=}: {@code of("customer-42")}
     * is {@code k=customer-42}; a value that is not plain is hashed (see the class comment).
     *
     * @throws IllegalArgumentException if {@code applicationKey} is null or blank
     */
    public static ClientKey of(String applicationKey) {
        if (applicationKey == null || applicationKey.isBlank()) {
            throw new IllegalArgumentException("a client key must not be null or blank");
        }
        return ofPart(APPLICATION_TAG + "=", applicationKey, false);
    }

    /** The one client of a {@code global} rule: everybody shares its counter. */
    public static ClientKey global() {
        return GLOBAL;
    }

    /**
     * A key exactly as Sluice shows it ({@link #value()}, the part between {@code :} and
     * {@code }} of a Redis key), e.g. {@code ip=203.0.113.7} or {@code k=customer-42}.
     *
     * @throws IllegalArgumentException if {@code value} is not a key Sluice could have made: longer
     *                                  than {@value #MAX_KEY} characters, or holding a character a
     *                                  bounded key never holds
     */
    public static ClientKey parse(String value) {
        if (value == null || value.isEmpty() || value.length() > MAX_KEY) {
            throw new IllegalArgumentException("not a Sluice client key (1 to " + MAX_KEY + " characters): " + value);
        }
        for (int i = 0; i < value.length(); i++) {
            char c = value.charAt(i);
            if (!isPlain(c) && c != '+' && c != '#') {
                throw new IllegalArgumentException("not a Sluice client key (character " + (int) c + " at " + i
                        + "; keys look like ip=203.0.113.7 or k=customer-42)");
            }
        }
        return new ClientKey(value);
    }

    /** The bounded text, e.g. {@code ip=203.0.113.7}: at most {@value #MAX_KEY} characters, no braces or spaces. */
    public String value() {
        return value;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof ClientKey other && value.equals(other.value);
    }

    @Override
    public int hashCode() {
        return value.hashCode();
    }

    @Override
    public String toString() {
        return value;
    }

    // ---- building, for ClientKeyResolver

    /** Appends {@code tag=value}, hashing the value when it is not plain or {@code alwaysHash}. */
    static void appendPart(StringBuilder key, String tag, String value, boolean alwaysHash) {
        key.append(tag).append('=');
        if (!alwaysHash && isPlain(value)) {
            key.append(value);
        } else {
            key.append('#').append(hash(value));
        }
    }

    /**
     * The key of one part, {@code prefix} being its tag and {@code =}: what {@link #appendPart} then
     * {@link #finish} make, as one string.
     */
    static ClientKey ofPart(String prefix, String value, boolean alwaysHash) {
        String text = !alwaysHash && isPlain(value) ? prefix.concat(value) : prefix + '#' + hash(value);
        return new ClientKey(text.length() <= MAX_KEY ? text : "#" + hash(text));
    }

    /** The finished key: as built, or {@code #<hash>} when longer than {@link #MAX_KEY}. */
    static ClientKey finish(StringBuilder key) {
        String text = key.toString();
        return new ClientKey(text.length() <= MAX_KEY ? text : "#" + hash(text));
    }

    static boolean isPlain(String value) {
        if (value.length() > MAX_PLAIN_VALUE) return false;
        for (int i = 0; i < value.length(); i++) {
            if (!isPlain(value.charAt(i))) return false;
        }
        return true;
    }

    static boolean isPlain(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
                || "-._~:@/=!$&'()*,;%".indexOf(c) >= 0;
    }

    /** 22 characters of unpadded base64url SHA-256: 128 bits, the same on every instance. */
    static String hash(String value) {
        MessageDigest digest = digest();
        byte[] sum = digest.digest(value.getBytes(StandardCharsets.UTF_8));
        return Base64.getUrlEncoder().withoutPadding().encodeToString(Arrays.copyOf(sum, 16));
    }

    private static MessageDigest digest() {
        try {
            return (MessageDigest) SHA_256.clone(); // cheaper than a provider lookup per call
        } catch (CloneNotSupportedException notCloneable) {
            try {
                return MessageDigest.getInstance("SHA-256");
            } catch (NoSuchAlgorithmException impossible) {
                throw new IllegalStateException(impossible);
            }
        }
    }
}
