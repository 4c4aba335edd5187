/**
 * What GraphiQL (GET /graphql in a browser) opens with: the headers each kind of caller sends,
 * and example operations to run one at a time (the ▶ button offers each by name).
 */
export const GRAPHIQL_EXAMPLES = `# Ticketing service: GraphQL explorer.
#
# Authentication goes in the Headers tab (below), as JSON:
#   staff (after POST /v1/auth/login):  {"Authorization": "Bearer <accessToken>", "X-Service-Org": "<organisation slug>"}
#   an organisation API key:            {"Authorization": "Bearer <key>"}
#   a widget's embed token:              {"Authorization": "Bearer <embed token>"}
#   a sales channel key (the Sales*):   {"Authorization": "Bearer svsk_..."} (or svpk_, publishable)
# Optional: {"Service-Version": "YYYY-MM-DD"} pins the API version of the answer.
# The same operations back the REST routes: /v1/docs and /live/docs describe those.

# Public: the API versions.
query ApiVersions {
  apiVersions { current resolved }
}

# Staff or an API key with events.read: a page of events, filtered.
query ListEvents {
  events(first: 20, status: ON_SALE) {
    nodes { id name status timezone tags }
    pagination { page limit total totalPages }
  }
}

# Staff or an API key with events.write on the account.
mutation CreateEvent {
  createEvent(input: { accountId: "acc_...", name: "Summer concert", timezone: "Europe/London", tags: ["music"] }) {
    event { id name status createdAt }
    userErrors { field code message }
  }
}

# A sales flow, with a channel key (storefronts use /live/sales/... with X-Live-Session):
# 1. what the channel sells,
query SalesListings {
  salesListings(page: 1, limit: 10) {
    events { eventId name occurrences { occurrenceId startsAt } ticketTypes { ticketTypeId name priceAmount currency onSale } }
    pagination { page total }
  }
}

# 2. a cart of tickets for an occurrence,
mutation CreateSalesCart {
  createSalesCart(items: [{ occurrenceId: "eoc_...", ticketTypeId: "tkt_...", quantity: 2 }]) {
    salesCart { id status itemCount currency }
    userErrors { field code message }
  }
}

# 3. checkout: a pending order holding the tickets, and the hosted page that takes the payment.
mutation CheckoutSalesCart {
  checkoutSalesCart(id: "crt_...", customer: { email: "buyer@example.com" }) {
    checkout { order { id status totalAmount currency } checkoutUrl }
    userErrors { field code message }
  }
}
`;
