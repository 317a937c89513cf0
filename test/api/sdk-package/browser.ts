/**
 * A web page's use of the SDK: test/api/sdk-package.test.ts type-checks it with the DOM library and
 * no Node types, and bundles it for the browser, where a Node built-in would not resolve.
 */
import { ApiError, createArtPlatformClient, verifyWebhookSignature } from "@art-platform/sdk";

const api = createArtPlatformClient({ baseUrl: location.origin, token: sessionStorage.getItem("token") ?? undefined });

document.querySelector("form")?.addEventListener("submit", async (event) => {
  event.preventDefault();
  const file = document.querySelector<HTMLInputElement>("input[type=file]")?.files?.[0];
  if (!file) return;
  try {
    const { data } = await api.POST("/v1/artworks", { body: { title: "Harbour at Dawn", year: "2021", medium: "Oil on canvas", image: file } });
    document.title = data.status;
  } catch (error) {
    if (error instanceof ApiError) document.title = `${error.code}: ${error.detail}`;
  }
});

export const verifiedInBrowser = (payload: string, headers: Headers, secret: string) => verifyWebhookSignature(payload, headers, secret);
