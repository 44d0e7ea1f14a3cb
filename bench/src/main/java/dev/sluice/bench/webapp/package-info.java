/**
 * The web applications {@code TomcatDistribution} deploys into the Apache Tomcat distribution:
 * the trivial servlet {@code wrk} loads, the floor filter, and the statistics servlet the harness
 * reads between runs. Only the JDK and the Servlet API here: these classes are copied into a
 * {@code WEB-INF/classes} and must not need anything else of the benchmark jar.
 */
package dev.sluice.bench.webapp;
