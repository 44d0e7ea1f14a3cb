package dev.sluice.key;

import dev.sluice.Sluice;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Arrays;
import java.util.Base64;

/**
 * The text of a client key, which becomes part of a Redis key ({@code <prefix>{<rule>:<clientKey>}}).
 *
 * <p>Layout: one {@code tag=value} part per source, joined by {@code +} for composites, e.g.
 * {@code ip=203.0.113.7}, {@code u=alice+ip=2001:db8:1:2::/64}, {@code h=key-42}, {@code global}.
 * The tag names the source, so values from different sources never share a counter (a header
 * holding {@code 203.0.113.7} is {@code h=203.0.113.7}, not the IP's {@code ip=203.0.113.7}).
 * A value is kept as it is only when it is at most {@value #MAX_PLAIN_VALUE} characters of
 * ASCII letters, digits and {@code - . _ ~ : @ / = ! $ & ' ( ) * , ; %}; any other value (too
 * long, or holding braces, {@code +}, {@code #}, whitespace, control or non-ASCII characters)
 * becomes {@code #} and 22 characters of base64url SHA-256 (128 bits). A plain value never
 * starts with {@code #}, so a hash never equals a plain value, and never holds {@code +}, so a
 * value cannot forge another part. A whole key longer than {@value #MAX_KEY} characters (a long
 * composite) is itself replaced by {@code #<hash>}. So a client key is at most
 * {@value #MAX_KEY} characters and never contains braces, whitespace or control characters,
 * whatever a client sends, and it is the same on every instance (no salt).
 */
public final class BoundedKey {

    static final int MAX_PLAIN_VALUE = 64;
    static final int MAX_KEY = 100;

    private static final MessageDigest SHA_256;

    static {
        try {
            SHA_256 = MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException impossible) {
            throw new ExceptionInInitializerError(impossible); // every JDK has SHA-256
        }
    }

    private BoundedKey() {
    }

    /**
     * The client key for a key chosen by application code ({@code Sluice.tryAcquire}): tagged
     * {@code k=} so it never shares a counter with a key the filter derives from a request.
     */
    public static String forApplicationKey(String value) {
        StringBuilder key = new StringBuilder(value.length() + 2);
        appendPart(key, "k", value, false);
        return finish(key);
    }

    /** Appends {@code tag=value}, hashing the value when it is not plain or {@code alwaysHash}. */
    static void appendPart(StringBuilder key, String tag, String value, boolean alwaysHash) {
        key.append(tag).append('=');
        if (!alwaysHash && isPlain(value)) {
            key.append(value);
        } else {
            key.append('#').append(hash(value));
        }
    }

    /** The finished key: as built, or {@code #<hash>} when longer than {@link #MAX_KEY}. */
    static String finish(StringBuilder key) {
        String text = key.toString();
        return text.length() <= MAX_KEY ? text : "#" + hash(text);
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
