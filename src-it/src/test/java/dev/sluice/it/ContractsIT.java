package dev.sluice.it;

import dev.sluice.it.support.ActualCostContract;
import dev.sluice.it.support.ConcurrencyContract;
import dev.sluice.it.support.Container;
import dev.sluice.it.support.EveryContainer;
import dev.sluice.it.support.LeaseRenewalContract;
import dev.sluice.it.support.LimitsPerClientContract;
import dev.sluice.it.support.MadeUpKeysContract;
import dev.sluice.it.support.ManyIdentitiesContract;
import dev.sluice.it.support.RulePathsContract;

/**
 * The tests that run on every container ({@link EveryContainer}), those of concurrency rules and settled costs
 * ({@link ConcurrencyContract}, {@link ActualCostContract}: on every embedded container, and in dist-it on Tomcat 11),
 * {@link LimitsPerClientContract},
 * {@link RulePathsContract}, {@link MadeUpKeysContract}, {@link LeaseRenewalContract} and
 * {@link ManyIdentitiesContract} (who the client is is Sluice's business, not the container's: one
 * container shows it), on embedded Jetty 12.1 in the ee10 environment (Servlet 6.0).
 */
class ContractsIT implements EveryContainer, ConcurrencyContract, ActualCostContract, LimitsPerClientContract, RulePathsContract, MadeUpKeysContract,
        LeaseRenewalContract, ManyIdentitiesContract {

    private final Container container = new Embedded("Jetty 12.1 ee10 (embedded)", params -> WebApp.start(new JettyEe10(), params));

    @Override
    public Container container() {
        return container;
    }
}
