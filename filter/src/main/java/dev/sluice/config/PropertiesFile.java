package dev.sluice.config;

import java.io.IOException;
import java.io.InputStream;
import java.io.StringReader;
import java.net.URI;
import java.net.URISyntaxException;
import java.net.URL;
import java.net.URLConnection;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileSystemNotFoundException;
import java.nio.file.Files;
import java.nio.file.InvalidPathException;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.function.UnaryOperator;

import static dev.sluice.config.ConfigKeys.CONFIG;

/**
 * Reads the properties file named by the {@code config} init-param: {@code classpath:/x.properties}
 * (the leading slash is optional), {@code file:/etc/app/x.properties}, or a plain path. The file is
 * read as UTF-8, or as ISO-8859-1 (the classic properties encoding) if it is not valid UTF-8, as
 * {@code PropertyResourceBundle} does. Every failure is a {@link ConfigException} naming {@code config}.
 */
final class PropertiesFile {

    static final String ACCEPTED = "classpath:/path/in/the/application.properties,"
            + " file:/absolute/path.properties, or a file path";

    private PropertiesFile() {
    }

    /**
     * @param location    where the file is, placeholders already substituted
     * @param classLoader for {@code classpath:}; {@code null} means this library's
     * @return the file's keys and values, untrimmed
     */
    static Map<String, String> read(String location, ClassLoader classLoader) {
        return parsed(location, bytes(location, classLoader));
    }

    /** The keys and values of a file's content, untrimmed. */
    static Map<String, String> parsed(String location, byte[] content) {
        return ConfigLoader.toMap(parse(location, content));
    }

    /**
     * The file's content as it is now. A {@code classpath:} resource is read where the class loader
     * finds it, not through the class loader's stream: a resource in a directory ({@code WEB-INF/classes}
     * of an unpacked WAR) is read as the file it is, any other (in a jar) without the URL connection's
     * caches, so that a container's resource cache (Tomcat's holds a resource about five seconds)
     * never hides an edit from a reload.
     *
     * @throws ConfigException naming {@code config} if it is missing or unreadable
     */
    static byte[] bytes(String location, ClassLoader classLoader) {
        if (isClasspath(location)) {
            URL url = resource(location, classLoader);
            Path file = fileOf(url);
            if (file != null) return read(location, file);
            try {
                URLConnection connection = url.openConnection();
                connection.setUseCaches(false);
                try (InputStream in = connection.getInputStream()) {
                    return in.readAllBytes();
                }
            } catch (IOException e) {
                throw new ConfigException(CONFIG, location, ACCEPTED + "; the resource " + url + " cannot be read: " + e, e);
            }
        }
        return read(location, path(location));
    }

    /**
     * Where the file is: its absolute path, or for a {@code classpath:} resource that is no file of
     * its own its URL; a resource of {@code WEB-INF/classes} that the class loader serves from a
     * virtual file system (WildFly's {@code vfs:}) is the file {@code realPath} names, if it exists.
     *
     * @param realPath the file a path of the web application is ({@code ServletContext.getRealPath}),
     *                 or {@code null} where there is none
     * @throws ConfigException naming {@code config} if a {@code classpath:} resource is missing
     */
    static String where(String location, ClassLoader classLoader, UnaryOperator<String> realPath) {
        if (!isClasspath(location)) return path(location).toAbsolutePath().toString();
        URL url = resource(location, classLoader);
        Path file = fileOf(url);
        if (file != null) return file.toString();
        String inClasses = "/WEB-INF/classes/" + resourceName(location);
        String real = realPath == null || !url.toString().endsWith(inClasses) ? null : realPath.apply(inClasses);
        return real != null && Files.isRegularFile(Path.of(real)) ? real : url.toString();
    }

    private static boolean isClasspath(String location) {
        return location.toLowerCase(Locale.ROOT).startsWith("classpath:");
    }

    private static String resourceName(String location) {
        String resource = location.substring("classpath:".length()).trim();
        while (resource.startsWith("/")) resource = resource.substring(1);
        return resource;
    }

    private static URL resource(String location, ClassLoader classLoader) {
        String resource = resourceName(location);
        if (resource.isEmpty()) throw new ConfigException(CONFIG, location, ACCEPTED + "; the resource name is missing");
        ClassLoader loader = classLoader != null ? classLoader : PropertiesFile.class.getClassLoader();
        URL url = loader.getResource(resource);
        if (url == null) {
            throw new ConfigException(CONFIG, location, ACCEPTED + "; there is no resource " + resource
                    + " on the web application's class path (WEB-INF/classes, WEB-INF/lib)");
        }
        return url;
    }

    /** The file a {@code file:} URL names, or {@code null} for any other URL. */
    private static Path fileOf(URL url) {
        if (!"file".equalsIgnoreCase(url.getProtocol())) return null;
        try {
            return Path.of(url.toURI());
        } catch (URISyntaxException | IllegalArgumentException | FileSystemNotFoundException notAPath) {
            return null;
        }
    }

    private static byte[] read(String location, Path path) {
        try {
            return Files.readAllBytes(path);
        } catch (NoSuchFileException e) {
            throw new ConfigException(CONFIG, location, ACCEPTED + "; there is no file " + path.toAbsolutePath(), e);
        } catch (IOException e) {
            throw new ConfigException(CONFIG, location, ACCEPTED + "; the file " + path.toAbsolutePath()
                    + " cannot be read: " + e, e);
        }
    }

    private static Path path(String location) {
        try {
            if (location.toLowerCase(Locale.ROOT).startsWith("file:")) {
                try {
                    return Path.of(new URI(location));
                } catch (URISyntaxException | IllegalArgumentException | FileSystemNotFoundException notAFileUri) {
                    // file:relative/path, or an unencoded space: what follows the scheme is the path
                    return Path.of(location.substring("file:".length()));
                }
            }
            return Path.of(location);
        } catch (InvalidPathException e) {
            throw new ConfigException(CONFIG, location, ACCEPTED + "; not a valid path: " + e.getMessage(), e);
        }
    }

    private static Properties parse(String location, byte[] bytes) {
        String text;
        try {
            text = StandardCharsets.UTF_8.newDecoder()
                    .onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT)
                    .decode(ByteBuffer.wrap(bytes))
                    .toString();
        } catch (CharacterCodingException notUtf8) {
            text = new String(bytes, StandardCharsets.ISO_8859_1);
        }
        List<String> repeated = new ArrayList<>(1);
        Properties properties = new Properties() {
            private static final long serialVersionUID = 1L;

            @Override
            public synchronized Object put(Object key, Object value) {
                Object before = super.put(key, value);
                if (before != null) repeated.add((String) key);
                return before;
            }
        };
        try {
            properties.load(new StringReader(text));
        } catch (IOException | IllegalArgumentException e) {
            throw new ConfigException(CONFIG, location, "a properties file (key=value lines): " + e.getMessage(), e);
        }
        if (!repeated.isEmpty()) {
            // the last line would win, silently: an edit further down (limit=2000) undoing the one above (limit=2)
            String key = repeated.get(0);
            throw new ConfigException(key, properties.getProperty(key), "set once in " + location + ", not "
                    + (1 + repeated.stream().filter(key::equals).count()) + " times: the last would win unseen; keep one line");
        }
        return properties;
    }
}
