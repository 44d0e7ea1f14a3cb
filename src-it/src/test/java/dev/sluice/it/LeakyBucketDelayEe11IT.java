package dev.sluice.it;

/** {@link LeakyBucketDelayIT}'s tests on embedded Jetty 12.1 in the ee11 environment (Servlet 6.1). */
class LeakyBucketDelayEe11IT extends LeakyBucketDelayIT {

    @Override
    WebApp.Environment environment() {
        return new JettyEe11();
    }
}
