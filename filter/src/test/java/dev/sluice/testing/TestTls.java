package dev.sluice.testing;

import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.cert.CertificateFactory;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A throw-away certificate authority and a server certificate for {@code 127.0.0.1}/{@code localhost},
 * made with {@code openssl} for a TLS-enabled {@link RedisProcess}, and an {@link SSLContext} that
 * trusts that CA (and nothing else).
 */
public final class TestTls {

    private final Path dir;

    private TestTls(Path dir) {
        this.dir = dir;
    }

    /** True when the installed {@code redis-server} links OpenSSL, i.e. understands {@code --tls-port}. */
    public static boolean redisSupportsTls() {
        String binary = RedisProcess.binary();
        if (binary == null) return false;
        try {
            return run(Path.of("."), List.of("ldd", binary)).contains("libssl");
        } catch (IllegalStateException e) {
            return false;
        }
    }

    public static TestTls generate() {
        try {
            Path dir = Files.createTempDirectory("sluice-tls");
            run(dir, List.of("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-keyout", "ca.key", "-out", "ca.crt", "-subj", "/CN=Sluice test CA"));
            run(dir, List.of("openssl", "req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key",
                    "-out", "server.csr", "-subj", "/CN=localhost"));
            Files.writeString(dir.resolve("san.cnf"), "subjectAltName=IP:127.0.0.1,DNS:localhost\n");
            run(dir, List.of("openssl", "x509", "-req", "-in", "server.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
                    "-CAcreateserial", "-out", "server.crt", "-days", "1", "-extfile", "san.cnf"));
            return new TestTls(dir);
        } catch (IOException e) {
            throw new IllegalStateException("could not create TLS material", e);
        }
    }

    /** {@code redis-server} arguments for TLS only (no plain port) on {@code port}, clients not asked for certificates. */
    public String[] redisArgs(int port) {
        return new String[]{"--port", "0", "--tls-port", Integer.toString(port),
                "--tls-cert-file", dir.resolve("server.crt").toString(),
                "--tls-key-file", dir.resolve("server.key").toString(),
                "--tls-ca-cert-file", dir.resolve("ca.crt").toString(),
                "--tls-auth-clients", "no"};
    }

    /** A client context that trusts only the test CA. */
    public SSLContext clientContext() {
        try (InputStream in = Files.newInputStream(dir.resolve("ca.crt"))) {
            KeyStore trust = KeyStore.getInstance(KeyStore.getDefaultType());
            trust.load(null, null);
            trust.setCertificateEntry("sluice-test-ca", CertificateFactory.getInstance("X.509").generateCertificate(in));
            TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
            tmf.init(trust);
            SSLContext ctx = SSLContext.getInstance("TLS");
            ctx.init(null, tmf.getTrustManagers(), null);
            return ctx;
        } catch (IOException | GeneralSecurityException e) {
            throw new IllegalStateException("could not load the test CA", e);
        }
    }

    private static String run(Path dir, List<String> cmd) {
        try {
            Process p = new ProcessBuilder(cmd).directory(dir.toFile()).redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (!p.waitFor(30, TimeUnit.SECONDS) || p.exitValue() != 0) {
                throw new IllegalStateException(String.join(" ", cmd) + " failed: " + out);
            }
            return out;
        } catch (IOException e) {
            throw new IllegalStateException("could not run " + cmd.get(0), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }
}
