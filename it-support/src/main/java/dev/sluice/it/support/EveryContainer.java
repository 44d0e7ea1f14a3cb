package dev.sluice.it.support;

/**
 * Every behaviour test that runs on every container, src-it's embedded ones and dist-it's
 * distributions: each container's IT class implements this. A new contract goes into the
 * {@code extends} list ({@link ContainerTest} says how to write one).
 */
public interface EveryContainer extends DeniedRequestContract, DispatchContract, FleetContract, HostileInputContract,
        LeakyBucketContract, CalendarContract {
}
