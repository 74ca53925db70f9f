import { filterTail, type ObservedCall } from '../../../bench/proxy';

/** The bench's account of its slow filters (bench/proxy.ts, `filterTail`), on calls made up to check each sum. */
function call(operation: string, startMs: number, endMs: number, serviceMs: number): ObservedCall {
  return { startMs, endMs, operation, requestBytes: 0, responseBytes: 0, status: 200, readUnits: 0, writeUnits: 0, serviceMs, delayOverRttMs: 0 };
}

describe('bench: where the slow filters lose their time', () => {
  // Ten filters, 1 to 10 ms long, 100 ms apart. Each reads the journal and books (the booking is its first write,
  // sent after the read), then writes its record.
  const windows = Array.from({ length: 10 }, (_, i) => ({ ms: i + 1, fromMs: i * 100, toMs: i * 100 + i + 1 }));
  const filterCalls = windows.flatMap((w, i) => [
    call('Query', w.fromMs, w.fromMs + 0.5, 0.1),
    call('UpdateItem', w.fromMs + 0.2, w.fromMs + 0.2 + (i + 1) / 2, 0.2),
    call('BatchWriteItem', w.fromMs + 0.3, w.fromMs + 0.9, 0.3),
  ]);
  // Another caller: one call inside the slowest filter's window, one reaching into the ninth's from before it, one
  // between windows. A call of the filter's own control plane outside its window (a refresh) is never "other".
  const otherCalls = [call('UpdateItem', 902, 905, 40), call('PutItem', 795, 801, 8), call('UpdateItem', 50, 60, 99)];
  const lateRefresh = call('BatchGetItem', 99, 101, 7);
  const controlPlaneCalls = [...filterCalls, lateRefresh];
  const tail = filterTail(
    windows.map((w) => ({ ...w, controlPlaneCalls })),
    [...controlPlaneCalls, ...otherCalls],
  );

  it('groups the filters by time: the fastest half, the 50th to 90th percentile, the slowest tenth', () => {
    expect([tail.fastestHalf.filters, tail.p50To90.filters, tail.slowestTenth.filters]).toEqual([5, 4, 1]);
    expect(tail.fastestHalf.meanMs).toBe(3);
    expect(tail.p50To90.meanMs).toBe(7.5);
    expect(tail.slowestTenth.meanMs).toBe(10);
  });

  it('takes the first write in the window as the booking, and sums the service of the filter’s own calls', () => {
    expect(tail.fastestHalf.bookingMs).toBeCloseTo(1.5);
    expect(tail.slowestTenth.bookingMs).toBeCloseTo(5);
    // Query, booking and record: calls started inside the window (the refresh from 99 to 101 started before the second
    // filter's window, so it is no one's here).
    expect(tail.slowestTenth.ownStoreServiceMs).toBeCloseTo(0.6);
  });

  it('charges a filter with the other callers’ calls that overlap its window, and with nothing else', () => {
    expect(tail.slowestTenth.otherStoreServiceMs).toBe(40);
    // Filter 9 (800 to 809) overlaps the call from 795 to 801; filters 6 to 8 overlap nothing.
    expect(tail.p50To90.otherStoreServiceMs).toBe(2);
    // The call between windows and the filter plane's own refresh (99 to 101, overlapping filter 2) are not charged.
    expect(tail.fastestHalf.otherStoreServiceMs).toBe(0);
  });

  it('reads an empty run as empty groups', () => {
    const empty = filterTail([], []);
    expect(empty.slowestTenth).toEqual({ filters: 0, meanMs: 0, bookingMs: 0, ownStoreServiceMs: 0, otherStoreServiceMs: 0 });
  });
});
