/** Public URLs of an artwork's media and documents (absolute: they go into token metadata). */
export class ArtworkLinks {
  constructor(private readonly baseUrl: () => string) {}
  /** The display size (docs/decisions.md#images). */
  image = (id: string) => `${this.baseUrl()}/v1/artworks/${id}/image`;
  derivative = (id: string, name: "thumbnail" | "display") => `${this.baseUrl()}/v1/artworks/${id}/images/${name}.webp`;
  thumbnail = (id: string) => this.derivative(id, "thumbnail");
  original = (id: string) => `${this.baseUrl()}/v1/artworks/${id}/original`;
  metadata = (id: string) => `${this.baseUrl()}/v1/artworks/${id}/metadata.json`;
  certificate = (id: string) => `${this.baseUrl()}/v1/artworks/${id}/certificate`;
  document = (id: string) => `${this.baseUrl()}/v1/artworks/${id}/certificate/document`;
  verify = (id: string) => `${this.baseUrl()}/verify/${id}`;
}
