/**
 * An events screen as a Relay app writes it, compiled by relay-compiler against the printed
 * schema (test/clients/relay.test.ts). A Relay app imports `graphql` from react-relay; here it is
 * a plain tag, since only the compiler reads these templates. Relay names fragments
 * `<Module>_<prop>` after the file (EventScreen).
 */
const graphql = String.raw;

/**
 * One event, refetchable by id alone: Relay generates EventScreenRefetchQuery through `node(id:)`,
 * which also pages its occurrences (a connection of the event).
 */
export const eventFragment = graphql`
  fragment EventScreen_event on Event
  @argumentDefinitions(occurrenceCount: { type: "Int", defaultValue: 10 }, occurrenceCursor: { type: "String" })
  @refetchable(queryName: "EventScreenRefetchQuery") {
    id
    name
    status
    onSaleDate
    venue {
      id
      name
    }
    account {
      id
      name
    }
    sales {
      capacity
      sold
      held
      available
    }
    occurrences(first: $occurrenceCount, after: $occurrenceCursor) @connection(key: "EventScreen_occurrences") {
      edges {
        node {
          id
          startsAt
          status
        }
      }
    }
  }
`;

/** The events list as a Relay connection: usePaginationFragment pages it with first/after, one list per status. */
export const eventsFragment = graphql`
  fragment EventScreen_events on Query
  @argumentDefinitions(count: { type: "Int", defaultValue: 20 }, cursor: { type: "String" }, status: { type: "EventStatus" })
  @refetchable(queryName: "EventScreenEventsPaginationQuery") {
    events(first: $count, after: $cursor, status: $status) @connection(key: "EventScreen_events", filters: ["status"]) {
      edges {
        node {
          id
          ...EventScreen_event
        }
      }
      pagination {
        total
      }
    }
  }
`;

/** The screen's query: the list and one event. */
export const screenQuery = graphql`
  query EventScreenQuery($id: ID!, $status: EventStatus) {
    event(id: $id) {
      ...EventScreen_event
    }
    ...EventScreen_events @arguments(status: $status)
  }
`;
