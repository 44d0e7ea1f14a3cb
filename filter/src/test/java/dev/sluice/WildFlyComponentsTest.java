package dev.sluice;

import jakarta.servlet.AsyncListener;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.lang.reflect.Modifier;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * WildFly makes every class of a WAR that implements {@link AsyncListener} (directly or through a
 * superclass), unless abstract, an EE component, and a component must have a no-arg constructor:
 * else every deployment logs {@code WARN ... WFLYEE0007: Not installing optional component} naming
 * the class. Checked here on the library's classes as WildFly scans them; {@code dist-it} checks
 * WildFly's log.
 */
class WildFlyComponentsTest {

    @Test
    void everyAsyncListenerClassOfTheJarHasANoArgConstructor() throws Exception {
        List<String> listeners = new ArrayList<>();
        List<String> withoutNoArgConstructor = new ArrayList<>();
        for (Class<?> type : classesOfTheJar()) {
            if (!AsyncListener.class.isAssignableFrom(type) || type.isInterface()
                    || Modifier.isAbstract(type.getModifiers())) continue;
            listeners.add(type.getName());
            try {
                type.getDeclaredConstructor();
            } catch (NoSuchMethodException missing) {
                withoutNoArgConstructor.add(type.getName());
            }
        }
        assertThat(listeners).as("the jar's listeners").isNotEmpty();
        assertThat(withoutNoArgConstructor).isEmpty();
    }

    private static List<Class<?>> classesOfTheJar() throws IOException, ClassNotFoundException {
        Path root = Path.of("target/classes");
        List<Class<?>> classes = new ArrayList<>();
        try (Stream<Path> files = Files.walk(root)) {
            for (Path file : files.filter(p -> p.toString().endsWith(".class")).toList()) {
                String relative = root.relativize(file).toString();
                String name = relative.substring(0, relative.length() - ".class".length()).replace('/', '.');
                classes.add(Class.forName(name, false, WildFlyComponentsTest.class.getClassLoader()));
            }
        }
        return classes;
    }
}
