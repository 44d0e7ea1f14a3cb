package dev.sluice;

import dev.sluice.config.RuleConfig;
import dev.sluice.config.SluiceConfig;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeSet;

/** What a new configuration changes, in one line for the log (secrets masked, as in {@link SluiceConfig#source()}). */
final class ConfigChanges {

    private ConfigChanges() {
    }

    static String describe(SluiceConfig running, SluiceConfig next) {
        List<String> changes = new ArrayList<>();
        Map<String, String> before = running.source();
        Map<String, String> after = next.source();
        if (!before.isEmpty() || !after.isEmpty()) {
            TreeSet<String> keys = new TreeSet<>(before.keySet());
            keys.addAll(after.keySet());
            for (String key : keys) {
                String was = before.get(key);
                String is = after.get(key);
                if (Objects.equals(was, is)) continue;
                changes.add(was == null ? key + "=" + is + " (new)" : is == null ? key + " removed (was " + was + ")"
                        : key + ": " + was + " -> " + is);
            }
        } else {
            for (RuleConfig r : next.rules()) {
                RuleConfig old = running.rule(r.name());
                if (old == null) changes.add("rule " + r.name() + " added");
                else if (!old.equals(r)) changes.add("rule " + r.name() + " changed");
            }
            for (RuleConfig r : running.rules()) {
                if (next.rule(r.name()) == null) changes.add("rule " + r.name() + " removed");
            }
        }
        return changes.isEmpty() ? "no setting changed" : String.join("; ", changes);
    }
}
