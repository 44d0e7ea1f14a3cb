package dev.sluice.it;

import dev.sluice.it.support.ActualCostContract;
import dev.sluice.it.support.ConcurrencyContract;
import dev.sluice.it.support.Container;
import dev.sluice.it.support.EveryContainer;
import dev.sluice.it.support.LeaseRenewalContract;
import dev.sluice.it.support.LimitsPerClientContract;
import dev.sluice.it.support.MadeUpKeysContract;
import dev.sluice.it.support.RulePathsContract;

/**
 * The tests that run on every container ({@link EveryContainer}), those of concurrency rules and settled costs
 * ({@link ConcurrencyContract}, {@link ActualCostContract}: on every embedded container, and in dist-it on Tomcat 11),
 * {@link LimitsPerClientContract},
 * {@link RulePathsContract}, {@link MadeUpKeysContract} and {@link LeaseRenewalContract}, on embedded
 * Apache Tomcat 11.
 */
class ContractsTomcatIT implements EveryContainer, ConcurrencyContract, ActualCostContract, LimitsPerClientContract, RulePathsContract, MadeUpKeysContract,
        LeaseRenewalContract {

    private final Container container = new Embedded("Tomcat 11 (embedded)", params -> TomcatWebApp.start(params));

    @Override
    public Container container() {
        return container;
    }
}
