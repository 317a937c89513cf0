/** Public URLs of an artwork's media and documents (absolute: they go into token metadata). */
export class ArtworkLinks {
  constructor(private readonly baseUrl: () => string) {}
  image = (id: string) => `${this.baseUrl()}/v1/artworks/${id}/image`;
  metadata = (id: string) => `${this.baseUrl()}/v1/artworks/${id}/metadata.json`;
  certificate = (id: string) => `${this.baseUrl()}/v1/artworks/${id}/certificate`;
  document = (id: string) => `${this.baseUrl()}/v1/artworks/${id}/certificate/document`;
  verify = (id: string) => `${this.baseUrl()}/verify/${id}`;
}
