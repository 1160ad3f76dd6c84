// Package revisit decides when a continuous crawl visits a URL again: a
// URL's interval after each visit, from what the visits observed
// (changed or not), within configured bounds (config.Revisit).
//
// The frontier keeps an Entry per done URL (interval, visits, changes)
// and calls Policy.First after a URL's first visit and Policy.Next after
// each revisit; the result's Interval is added to the visit's time to
// give the URL's next due time. It calls Policy.Tune periodically with
// its revisit queue, so that the schedules ask for about as many fetches
// as the crawl makes.
//
// # Policies
//
// "uniform" visits every URL at its initial interval (revisit.initial, or
// an override's): Cho and Garcia-Molina's uniform policy, kept for
// comparison.
//
// "adaptive" (the default) follows Cho and Garcia-Molina, "Effective page
// refresh policies for web crawlers" (ACM TODS 28(4), 2003). A page whose
// changes are a Poisson process of rate lambda, visited every I, is fresh
// a share (1-e^-r)/r of the time, r = lambda*I. Maximizing the sum of
// the pages' freshness for a fixed number of fetches per second gives,
// with the Lagrange multiplier mu (the price of one more fetch per
// second, in seconds), the condition 1-(1+r)e^-r = mu*lambda for each
// page: slow pages get intervals that grow as lambda falls, pages with
// mu*lambda >= 1 change too often to be worth their fetches and get the
// longest interval (revisit.max). The policy:
//
//   - estimates lambda from the entry with the paper's estimator for n
//     visits at interval I of which x saw a change,
//     -ln((n-x+0.5)/(n+0.5))/I (EstimateRate), except at the two ends:
//     with no change seen it assumes half a change (a finite interval that
//     grows with the visits), and with a change at every visit it plans
//     with the rate's lower 10% confidence bound and halves the interval
//     to find out how fast the page is, unless even that bound is too fast
//     for the price, which moves the page toward revisit.max;
//   - picks the interval solving the condition above at the current price
//     (Price), moving at most 4x shorter or 2x longer per visit, within
//     the URL's bounds;
//   - rescales the counts when the interval changes, so that they keep
//     estimating the same rate (Visits x Interval stays the time observed),
//     and halves them past 2 x Window visits.
//
// Tune, called about once a minute, moves the price: up 0.5% when the
// frontier has overdue URLs (the schedules ask for more than the crawl
// fetches), down 0.5% otherwise (fetch slots to spare). So the budget is the crawl's capacity, and the
// price settles where the schedules use it.
//
// Measured with the deterministic simulation in sim_test.go (1,000 pages
// of synthweb's change distribution, fetches in due order at a fixed
// budget; docs/benchmarks.md has the table): at 0.278 fetches/s (a
// uniform interval of 1 h) adaptive 0.566, uniform 0.550, optimal from
// the true rates 0.605; at 1.667/s (10 min) 0.716, 0.683 and 0.739.
//
// # Caveats
//
//   - A Policy is safe for concurrent use; the price is one atomic value.
//   - Nothing is persisted: the price starts again, at the value that
//     gives a page changing once per revisit.initial that interval, when
//     the process restarts; the entries are the frontier's.
//   - The estimate assumes the visits of a page were at about its current
//     interval; visits delayed by a backlog see more changes than the
//     interval explains, and the estimate errs high until Tune raises the
//     price.
//   - A visit that could not tell change from no change (an error) counts
//     as no change.
//   - A page that changes at every visit is not dropped to revisit.max as
//     the optimal policy would: the halving probe and the 2x lengthening
//     alternate (at the initial price with revisit.initial 1h, between 30
//     min and 1 h). Jumping straight to revisit.max, tried, dropped pages
//     worth their fetches too (their lower bound, computed from visits at a
//     longer interval, looked too fast) and lost 2 points of freshness in
//     the simulation; so did probing down to mu/2 before dropping the page
//     for good (0.549 against 0.566 at the 1-hour budget: pages dropped
//     while the price was high never came back). A better rule for such
//     pages is open; the slots they take are most of the gap to the
//     optimal policy.
//   - The price moves slowly (35% an hour at a call a minute): a crawl
//     whose capacity changes a lot takes hours to follow it.
package revisit
