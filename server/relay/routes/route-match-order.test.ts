import { describe, expect, it } from 'vitest';
import { inMatchOrder, pathsOverlap } from './route-match-order.js';

const r = (method: string, path: string) => ({ method, path });

describe('inMatchOrder', () => {
  it('puts the hot routes first and keeps the others in their declared order', () => {
    const routes = [r('get', '/health'), r('get', '/items/{id}'), r('post', '/items'), r('post', '/items/{id}/vote'), r('get', '/me')];
    expect(inMatchOrder(routes, ['POST /items/{id}/vote']).map((x) => `${x.method} ${x.path}`)).toEqual(['post /items/{id}/vote', 'get /health', 'get /items/{id}', 'post /items', 'get /me']);
  });

  it('refuses to move a route ahead of one that may match the same requests', () => {
    const routes = [r('post', '/items/{id}/{what}'), r('post', '/items/{id}/vote')];
    expect(() => inMatchOrder(routes, ['POST /items/{id}/vote'])).toThrow(/cannot be tried before POST \/items\/\{id\}\/\{what\}/);
  });

  it('refuses a hot route that does not exist', () => {
    expect(() => inMatchOrder([r('get', '/health')], ['POST /items/{id}/vote'])).toThrow(/no route POST \/items\/\{id\}\/vote/);
  });
});

describe('pathsOverlap', () => {
  it('matches literal segments exactly and a parameter against any one segment', () => {
    expect(pathsOverlap('/items/{id}/vote', '/items/{id}/vote')).toBe(true);
    expect(pathsOverlap('/items/{id}/vote', '/items/abc/vote')).toBe(true);
    expect(pathsOverlap('/items/{id}/vote', '/items/{id}/report')).toBe(false);
    expect(pathsOverlap('/items/{id}/vote', '/items/{id}')).toBe(false);
    expect(pathsOverlap('/slice/include', '/slice/{x}')).toBe(true);
  });
});
