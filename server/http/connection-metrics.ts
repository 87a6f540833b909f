import { Counter, Gauge, type Registry } from 'prom-client';
import type { ConnectionCounts } from './connection-cap.js';

/**
 * The connection cap's counts (connection-cap.ts, decision 1040) in `registry`, read when scraped:
 * connections open, closed for room, and refused. Per replica, like the HTTP request metrics: each
 * has its own cap. Without them an attack holding the cap, or a cap set too low, went unseen.
 */
export function connectionMetrics(registry: Registry, counts: ConnectionCounts): void {
  new Gauge({
    name: 'hilbench_http_connections',
    help: 'HTTP connections open on this replica now, each holding one of the --max-connections places.',
    registers: [registry],
    collect() {
      this.set(counts.open);
    },
  });
  new Counter({
    name: 'hilbench_http_connections_closed_for_room_total',
    help: 'Connections closed at the --max-connections cap to make room for a newcomer, each the one that had waited longest for a request head or whose body fell behind its pace (a stalled head or body answered 408, an idle keep-alive closed). Rising fast: stalled heads or bodies (slowloris) or a cap set too low.',
    registers: [registry],
    collect() {
      // A counter has no set: the cap counts, the scrape copies.
      this.reset();
      this.inc(counts.closedForRoom);
    },
  });
  new Counter({
    name: 'hilbench_http_connections_refused_total',
    help: 'Newcomers closed unanswered at the --max-connections cap because every place was being answered (long polls, streams, uploads): clients shut out, the cap too low for them.',
    registers: [registry],
    collect() {
      this.reset();
      this.inc(counts.refused);
    },
  });
}
