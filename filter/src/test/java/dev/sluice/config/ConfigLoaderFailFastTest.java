package dev.sluice.config;

import org.junit.jupiter.api.Test;

import java.util.LinkedHashMap;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

/** Found by a configuration review of 0.3: what the loader accepted or explained wrongly; each failed before its fix. */
class ConfigLoaderFailFastTest {

    private static Map<String, String> with(String... kv) {
        Map<String, String> m = new LinkedHashMap<>();
        m.put("rules", "api");
        m.put("rule.api.limit", "1000");
        m.put("rule.api.window", "1m");
        for (int i = 0; i < kv.length; i += 2) m.put(kv[i], kv[i + 1]);
        return m;
    }

    // F4 (medium): "1M" (a month, as "1mo" is) is silently read as one minute: a monthly quota becomes
    // 43,200 times looser. The README's units are 250ms, 30s, 5m, 1h, 1d and 1mo; M is undocumented.
    @Test
    void anUppercaseMWindowIsNotSilentlyOneMinute() {
        ConfigException e = catchThrowableOfType(() -> ConfigLoader.load(with("rule.api.window", "1M")), ConfigException.class);
        assertThat(e).as("rule.api.window=1M accepted as %s",
                e == null ? ConfigLoader.load(with("rule.api.window", "1M")).rules().get(0).rule().window() : null).isNotNull();
        assertThat(e.key()).isEqualTo("rule.api.window");
    }

    // F8 (low): a non-number in a global integer key gets a hint of the int range, not the key's own range.
    @Test
    void aNonNumericStatusCodeIsToldTheAcceptedRange() {
        ConfigException e = catchThrowableOfType(() -> ConfigLoader.load(with("status-code", "too-many")), ConfigException.class);
        assertThat(e).hasMessageContaining("400 to 599");
    }

    @Test
    void aNonNumericIpv6PrefixIsToldTheAcceptedRange() {
        ConfigException e = catchThrowableOfType(() -> ConfigLoader.load(with("ipv6-prefix", "/64")), ConfigException.class);
        assertThat(e).hasMessageContaining("0 to 128");
    }
}
