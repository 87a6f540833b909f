import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { answerMalformedRequest } from './malformed-request.js';

/** A connection's place under the cap: how many of its requests are being answered, and what it had read when it last started waiting for a head. */
interface Place {
  busyRequests: number;
  upgraded: boolean;
  bytesReadWhenIdle: number;
  /** Set while its request body is behind its pace: closes it for room with the 408 body-stall.ts gives such a body. */
  cutBodyForRoom: (() => void) | null;
}

/** What a cap has seen, read live (for the services' metrics): never written by its readers. */
export interface ConnectionCounts {
  /** Connections holding a place now (accepted, not yet closed or closed for room). */
  readonly open: number;
  /** Connections closed to make room for a newcomer, each the one that had waited longest for a request head (or whose body fell behind). */
  readonly closedForRoom: number;
  /** Newcomers closed unanswered because every place was being answered. */
  readonly refused: number;
}

/** The caps of the servers `listen` started, so that `serve` can tell one which connections an upgrade took. */
const caps = new WeakMap<Server, { upgraded(socket: Socket): void }>();

/**
 * Holds at most `maxConnections` connections on `server`, making room for a newcomer by closing
 * the connection that has waited longest for a request head, rather than refusing the newcomer
 * (node's `maxConnections` refuses it, so one client holding the cap with stalled heads, slowloris,
 * shut everyone out until the head timeout). Waiting for a head means: accepted and no head yet, or
 * answered (keep-alive) and no next head yet; such a connection has sent nothing a request can be
 * made of, and waiting longest is what a drip-fed head does. One that has sent part of a head is
 * answered as its head timeout would answer it (408, closed); one that has sent nothing is closed,
 * as node closes an idle keep-alive connection. A connection being answered (a long poll, a live
 * stream, an upload, an upgraded stream) is never closed for room: when every place is such, the
 * newcomer is closed at once, unanswered, as before, unless its request body fell behind the pace
 * `listen` asks of bodies (`bodyBehind`, told by body-stall.ts): such a connection is closable as a
 * stalled head is (answered 408, saying the pace it missed, if nothing was written for its request
 * yet), so a body dripped a byte at a time does not hold its place either.
 *
 * The order is that of a Map (re-inserted when a connection starts waiting), so no clock is read.
 * Heads and answers are seen on node's `http.server.request.start` and `http.server.response.finish`
 * diagnostics channels, which see every request (`checkContinue` and `checkExpectation` ones too);
 * upgrades are told by `upgradedConnection`. Returns the function that stops watching, the
 * cap's live counts (nothing counted them, so an attack or a cap set too low went unseen), and
 * `bodyBehind` for the body pace to call.
 */
export function capConnections(server: Server, maxConnections: number): { stop: () => void; counts: ConnectionCounts; bodyBehind: (socket: Socket, cutForRoom: (() => void) | null) => void } {
  const places = new Map<Socket, Place>();
  let closedForRoom = 0;
  let refused = 0;
  // Connections waiting for a head (or whose body fell behind), the one waiting longest first.
  const waiting = new Set<Socket>();
  const startWaiting = (socket: Socket, place: Place) => {
    place.bytesReadWhenIdle = socket.bytesRead;
    waiting.delete(socket);
    waiting.add(socket);
  };
  const onConnection = (socket: Socket) => {
    if (places.size >= maxConnections && !makeRoom()) {
      refused++;
      socket.destroy();
      return;
    }
    const place: Place = { busyRequests: 0, upgraded: false, bytesReadWhenIdle: 0, cutBodyForRoom: null };
    places.set(socket, place);
    startWaiting(socket, place);
    socket.once('close', () => {
      places.delete(socket);
      waiting.delete(socket);
    });
  };
  const makeRoom = (): boolean => {
    const [longest] = waiting;
    if (!longest) return false;
    const place = places.get(longest)!;
    places.delete(longest);
    waiting.delete(longest);
    closedForRoom++;
    if (place.cutBodyForRoom) place.cutBodyForRoom();
    else if (longest.bytesRead > place.bytesReadWhenIdle) answerMalformedRequest(Object.assign(new Error('request head not received in time'), { code: 'ERR_HTTP_REQUEST_TIMEOUT' }), longest);
    else longest.destroy();
    return true;
  };
  const onHead = (message: unknown) => {
    const { server: of, socket } = message as { server: Server; socket: Socket };
    const place = of === server ? places.get(socket) : undefined;
    if (!place) return;
    place.busyRequests++;
    waiting.delete(socket);
  };
  const onAnswered = (message: unknown) => {
    const { server: of, socket } = message as { server: Server; socket: Socket };
    const place = of === server ? places.get(socket) : undefined;
    if (!place || place.upgraded) return;
    place.busyRequests = Math.max(0, place.busyRequests - 1);
    if (place.busyRequests === 0) startWaiting(socket, place);
  };
  // A request body that fell behind its pace (body-stall.ts) is closable for room as a stalled
  // head is, behind the heads that stalled before it; one that moves again, or ends, no longer.
  const bodyBehind = (socket: Socket, cutForRoom: (() => void) | null) => {
    const place = places.get(socket);
    // An upgraded connection is told of only when its Upgrade was ignored and its body is read apart.
    if (!place || (!place.upgraded && place.busyRequests === 0)) return;
    place.cutBodyForRoom = cutForRoom;
    if (!cutForRoom) waiting.delete(socket);
    else if (!waiting.has(socket)) waiting.add(socket);
  };
  server.on('connection', onConnection);
  subscribe('http.server.request.start', onHead);
  subscribe('http.server.response.finish', onAnswered);
  caps.set(server, {
    upgraded(socket) {
      const place = places.get(socket);
      if (!place) return;
      place.upgraded = true;
      waiting.delete(socket);
    },
  });
  const stop = () => {
    server.off('connection', onConnection);
    unsubscribe('http.server.request.start', onHead);
    unsubscribe('http.server.response.finish', onAnswered);
    caps.delete(server);
  };
  const counts: ConnectionCounts = {
    get open() {
      return places.size;
    },
    get closedForRoom() {
      return closedForRoom;
    },
    get refused() {
      return refused;
    },
  };
  return { stop, counts, bodyBehind };
}

/** Tells `server`'s cap that an upgrade took `socket`: it is a stream now, never closed for room. */
export function upgradedConnection(server: Server, socket: Duplex): void {
  caps.get(server)?.upgraded(socket as Socket);
}
